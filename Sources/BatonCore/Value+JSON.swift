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
