extension Value {
    /// How deep arrays and dictionaries may nest: 30 levels. On the wire a dictionary level is
    /// three protobuf messages (Dictionary, Entry, Value) and an array level two, so at this
    /// depth every frame stays within the 100 levels of nesting that stock protobuf parsers
    /// (upb, SwiftProtobuf, Go's, Java's) accept: whatever Baton sends or answers, any client
    /// generated from the .proto can read.
    public static let maxDepth = 30

    /// Checks what can arrive broken from the wire, throwing the first problem found.
    ///
    /// - Every array must be homogeneous: all elements of the same ``Kind`` (`int` and
    ///   `double` are different kinds). The error names the first odd element, e.g.
    ///   `message.items[3]: expected string like items[1], got integer`.
    /// - A dictionary's keys must be unique: `message.name: duplicate key`.
    /// - No more than `maxDepth` arrays and dictionaries may be nested (a scalar root has
    ///   depth 0, `[1]` depth 1). The error names the first container that is too deep, e.g.
    ///   `message.a.b: nested deeper than 30 levels`.
    ///
    /// Paths start at `path` and follow ``ValuePath``. When a value has several problems the
    /// one reported is the first in array order and key order (by Unicode scalars), so the
    /// same value always reports the same problem.
    public func validate(path: String = "message", maxDepth: Int = Value.maxDepth) throws(ValueError) {
        var components: [ValuePath.Component] = []
        // Dictionary order is arbitrary: the fast pass takes it as it comes, and only a failing
        // value is walked again in key order, so the report is deterministic.
        guard Self.findProblem(in: self, depth: 0, maxDepth: maxDepth, sortedKeys: false, &components) != nil
        else { return }
        components.removeAll()
        guard let problem = Self.findProblem(in: self, depth: 0, maxDepth: maxDepth, sortedKeys: true, &components)
        else { return }
        let location = ValuePath.render(path, components)
        switch problem {
        case .tooDeep:
            throw ValueError(path: location, reason: "nested deeper than \(maxDepth) levels")
        case .duplicateKey:
            throw ValueError(path: location, reason: "duplicate key")
        case .mixed(let expected, let got):
            let array = ValuePath.render(path, components.dropLast())
            let like = ValuePath.lastComponent(ValuePath.element(array, 1))
            throw ValueError(
                path: location, reason: "expected \(expected.luaName) like \(like), got \(got.luaName)")
        }
    }

    private enum Problem {
        case mixed(expected: Kind, got: Kind)
        case duplicateKey
        case tooDeep
    }

    /// Returns the first problem, leaving `components` pointing at it.
    private static func findProblem(
        in value: Value, depth: Int, maxDepth: Int, sortedKeys: Bool,
        _ components: inout [ValuePath.Component]
    ) -> Problem? {
        switch value {
        case .array(let items):
            guard depth < maxDepth else { return .tooDeep }
            guard let kind = items.first?.kind else { return nil }
            // The array's own shape first: a mixed outer array matters more than its insides.
            for (offset, item) in items.enumerated() where item.kind != kind {
                components.append(.index(offset + 1))
                return .mixed(expected: kind, got: item.kind)
            }
            guard kind == .array || kind == .dictionary else { return nil }
            for (offset, item) in items.enumerated() {
                components.append(.index(offset + 1))
                if let problem = findProblem(
                    in: item, depth: depth + 1, maxDepth: maxDepth, sortedKeys: sortedKeys, &components)
                {
                    return problem
                }
                components.removeLast()
            }
            return nil
        case .dictionary(let members):
            guard depth < maxDepth else { return .tooDeep }
            if let duplicate = members.firstDuplicateKey {
                components.append(.key(duplicate))
                return .duplicateKey
            }
            if sortedKeys {
                let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                for (key, member) in sorted {
                    if let problem = check(
                        member: key, member, depth: depth, maxDepth: maxDepth, sortedKeys: true, &components)
                    {
                        return problem
                    }
                }
            } else {
                for (key, member) in members {
                    if let problem = check(
                        member: key, member, depth: depth, maxDepth: maxDepth, sortedKeys: false, &components)
                    {
                        return problem
                    }
                }
            }
            return nil
        default:
            return nil
        }
    }

    private static func check(
        member key: String, _ member: Value, depth: Int, maxDepth: Int, sortedKeys: Bool,
        _ components: inout [ValuePath.Component]
    ) -> Problem? {
        switch member {
        case .array, .dictionary:
            components.append(.key(key))
            if let problem = findProblem(
                in: member, depth: depth + 1, maxDepth: maxDepth, sortedKeys: sortedKeys, &components)
            {
                return problem
            }
            components.removeLast()
            return nil
        default:
            return nil
        }
    }
}
