#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Value {
    /// The JSON form of this value.
    ///
    /// Dates become ISO 8601 strings (``ISO8601/format(_:)``), UUIDs lowercase canonical
    /// strings, bytes padded standard base64 strings (``Base64/encode(_:)``); dictionary members
    /// are written in key order (by Unicode scalars) so the output is deterministic.
    ///
    /// - Throws: ``ValueError`` for a NaN or infinite double, which JSON cannot represent,
    ///   with the path of the number below `path`, e.g.
    ///   `value.samples[2]: NaN cannot be written as JSON`.
    public func json(path: String = "value") throws(ValueError) -> JSON {
        var components: [ValuePath.Component] = []
        do {
            return try Self.json(of: self, &components)
        } catch {
            throw ValueError(path: ValuePath.render(path, components), reason: error.reason)
        }
    }

    private struct Unrepresentable: Error {
        var reason: String
    }

    /// Converts `value`, leaving `components` pointing at the culprit when it throws.
    private static func json(
        of value: Value, _ components: inout [ValuePath.Component]
    ) throws(Unrepresentable) -> JSON {
        switch value {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        case .double(let d):
            if d.isNaN { throw Unrepresentable(reason: "NaN cannot be written as JSON") }
            if d.isInfinite { throw Unrepresentable(reason: "infinity cannot be written as JSON") }
            return .double(d)
        case .bool(let b): return .bool(b)
        case .date(let date): return .string(ISO8601.format(date))
        case .uuid(let uuid): return .string(uuid.uuidString.lowercased())
        case .bytes(let bytes): return .string(Base64.encode(bytes))
        case .array(let items):
            var out: [JSON] = []
            out.reserveCapacity(items.count)
            for (offset, item) in items.enumerated() {
                components.append(.index(offset + 1))
                out.append(try json(of: item, &components))
                components.removeLast()
            }
            return .array(out)
        case .dictionary(let members):
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            var out: [JSON.Member] = []
            out.reserveCapacity(sorted.count)
            for (key, member) in sorted {
                components.append(.key(key))
                out.append(JSON.Member(key, try json(of: member, &components)))
                components.removeLast()
            }
            return .object(out)
        }
    }
}

extension Value {
    /// The value a JSON document describes: strings, integers, numbers, booleans, arrays and
    /// objects map to their kinds; an array of numbers that mixes integers and fractions
    /// becomes all doubles. `null`, and arrays whose elements are of different kinds, have no
    /// message form: errors that name their path below `path`.
    public init(json: JSON, path: String = "value") throws(ValueError) {
        self = try Self.value(json, path: path)
    }

    private static func value(_ json: JSON, path: String) throws(ValueError) -> Value {
        switch json {
        case .null:
            throw ValueError(path: path, reason: "null has no message form; leave the key out")
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let elements):
            var items: [Value] = []
            items.reserveCapacity(elements.count)
            for (offset, element) in elements.enumerated() {
                items.append(try value(element, path: ValuePath.element(path, offset + 1)))
            }
            // JSON does not tell 2 from 2.0: numbers in one array are all doubles if one is.
            if items.contains(where: { $0.kind == .double }), items.allSatisfy({ $0.kind == .double || $0.kind == .int }) {
                items = items.map { if case .int(let i) = $0 { .double(Double(i)) } else { $0 } }
            }
            try Value.array(items).validate(path: path)
            return .array(items)
        case .object(let members):
            var dictionary = ValueDictionary(minimumCapacity: members.count)
            for member in members {
                dictionary[member.key] = try value(member.value, path: ValuePath.member(path, member.key))
            }
            return .dictionary(dictionary)
        }
    }
}
