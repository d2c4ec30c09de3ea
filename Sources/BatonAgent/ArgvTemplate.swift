import BatonCore

/// A command as an argv list whose elements may hold `{uri}` and `{data.KEY}`. Substitution
/// happens inside each element; the result is never given to a shell, so a URI stays one
/// argument whatever it contains.
public struct ArgvTemplate: Sendable, Equatable {
    /// The elements as configured.
    public let elements: [String]

    /// Fails unless there is at least a program name.
    public init(_ elements: [String]) throws(AgentConfigurationError) {
        guard let first = elements.first, !first.isEmpty else {
            throw AgentConfigurationError("run: the argv list needs at least the program to run")
        }
        self.elements = elements
    }

    /// The argv for launching `uri` with `data`. `{data.KEY}` becomes the value's text
    /// (strings as they are, numbers and booleans as Lua prints them, dates in ISO 8601), or
    /// the empty string when the key is missing.
    public func argv(uri: String, data: ValueDictionary) -> [String] {
        elements.map { substitute($0, uri: uri, data: data) }
    }

    private func substitute(_ element: String, uri: String, data: ValueDictionary) -> String {
        guard element.contains("{") else { return element }
        var out = ""
        var rest = element[...]
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = rest[rest.index(after: open)..<close]
            if name == "uri" {
                out += uri
            } else if name.hasPrefix("data.") {
                out += data[String(name.dropFirst(5))].map(Self.text) ?? ""
            } else {
                out += rest[open...close] // not ours: keep it as written
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    static func text(_ value: Value) -> String {
        switch value {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .date(let d): ISO8601.format(d)
        case .uuid(let u): u.uuidString.lowercased()
        case .bytes(let b): Base64.encode(b)
        case .array, .dictionary: (try? value.json().serialized(sortKeys: true)) ?? ""
        }
    }
}

/// A mistake in an agent's configuration, as the author should read it.
public struct AgentConfigurationError: Error, Sendable, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
