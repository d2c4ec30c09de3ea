#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import BatonCore

// MARK: Value → wire

extension Baton_V1_Value {
    /// `value` as it goes on the wire. Dates become microseconds since 1970, rounded to the
    /// nearest one.
    public init(_ value: Value) {
        self.init()
        switch value {
        case .string(let s): kind = .stringValue(s)
        case .int(let i): kind = .intValue(i)
        case .double(let d): kind = .doubleValue(d)
        case .bool(let b): kind = .boolValue(b)
        case .date(let d): kind = .dateValue(WireDate.microseconds(d))
        case .uuid(let u): kind = .uuidValue(withUnsafeBytes(of: u.uuid) { Data($0) })
        case .bytes(let b): kind = .bytesValue(Data(b))
        case .array(let items):
            var array = Baton_V1_Array()
            array.elements.reserveCapacity(items.count)
            for item in items { array.elements.append(Baton_V1_Value(item)) }
            kind = .arrayValue(array)
        case .dictionary(let members):
            kind = .dictionaryValue(Baton_V1_Dictionary(members))
        }
    }
}

extension Baton_V1_Dictionary {
    /// `dictionary` as it goes on the wire, members in order.
    public init(_ dictionary: ValueDictionary) {
        self.init()
        var entries: [Entry] = []
        entries.reserveCapacity(dictionary.count)
        for (key, value) in dictionary {
            var entry = Entry()
            entry.key = key
            entry.value = Baton_V1_Value(value)
            entries.append(entry)
        }
        self.entries = entries
    }
}

// MARK: wire → Value

extension Value {
    /// The value `wire` carries, refusing what breaks the Value rules of Protocol/baton.proto.
    ///
    /// - Throws: ``ValueError`` naming the place below `path`: `value has no kind`,
    ///   `uuid must be 16 bytes, got 15`, or what ``Value/validate(path:maxDepth:)`` finds
    ///   (mixed arrays, repeated keys, nesting deeper than `maxDepth`).
    public init(wire: Baton_V1_Value, path: String = "message", maxDepth: Int = 64) throws(ValueError) {
        var reader = WireValueReader(maxDepth: maxDepth)
        do throws(WireValueReader.Problem) {
            self = try reader.value(wire, depth: 0)
        } catch {
            throw error.valueError(below: path)
        }
        // Only a value the reader saw something odd in pays for the full (ordered) check.
        if reader.suspicious { try validate(path: path, maxDepth: maxDepth) }
    }
}

extension ValueDictionary {
    /// The dictionary `wire` carries, refusing what breaks the Value rules; see
    /// ``Value/init(wire:path:maxDepth:)``. `path` names the dictionary itself.
    public init(wire: Baton_V1_Dictionary, path: String = "message", maxDepth: Int = 64) throws(ValueError) {
        var reader = WireValueReader(maxDepth: maxDepth)
        do throws(WireValueReader.Problem) {
            self = try reader.dictionary(wire, depth: 0)
        } catch {
            throw error.valueError(below: path)
        }
        if reader.suspicious { try Value.dictionary(self).validate(path: path, maxDepth: maxDepth) }
    }
}

/// Converts wire values in one pass, noting (not diagnosing) what `validate` would refuse.
struct WireValueReader {
    /// A refusal found while converting; the path is collected on the way out, innermost first,
    /// so converting a good value never builds one.
    struct Problem: Error {
        enum Step {
            case key(String)
            /// 1-based.
            case index(Int)
        }
        var reason: String
        var steps: [Step] = []

        func valueError(below root: String) -> ValueError {
            var path = root
            for step in steps.reversed() {
                switch step {
                case .key(let key): path = ValuePath.member(path, key)
                case .index(let index): path = ValuePath.element(path, index)
                }
            }
            return ValueError(path: path, reason: reason)
        }
    }

    let maxDepth: Int
    /// Set when a mixed array, a repeated key or a too-deep container was seen.
    private(set) var suspicious = false

    init(maxDepth: Int) {
        self.maxDepth = maxDepth
    }

    mutating func value(_ wire: Baton_V1_Value, depth: Int) throws(Problem) -> Value {
        guard let kind = wire.kind else { throw Problem(reason: "value has no kind") }
        switch kind {
        case .stringValue(let s): return .string(s)
        case .intValue(let i): return .int(i)
        case .doubleValue(let d): return .double(d)
        case .boolValue(let b): return .bool(b)
        case .dateValue(let microseconds): return .date(WireDate.date(microseconds))
        case .uuidValue(let data):
            guard data.count == 16 else { throw Problem(reason: "uuid must be 16 bytes, got \(data.count)") }
            return .uuid(UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
        case .bytesValue(let data): return .bytes([UInt8](data))
        case .arrayValue(let array): return .array(try self.array(array, depth: depth))
        case .dictionaryValue(let dictionary): return .dictionary(try self.dictionary(dictionary, depth: depth))
        }
    }

    mutating func array(_ wire: Baton_V1_Array, depth: Int) throws(Problem) -> [Value] {
        if depth >= maxDepth { suspicious = true }
        let elements = wire.elements
        var items: [Value] = []
        items.reserveCapacity(elements.count)
        var first: Value.Kind? = nil
        for (offset, element) in elements.enumerated() {
            let item: Value
            do throws(Problem) {
                item = try value(element, depth: depth + 1)
            } catch {
                var problem = error
                problem.steps.append(.index(offset + 1))
                throw problem
            }
            if let first {
                if item.kind != first { suspicious = true }
            } else {
                first = item.kind
            }
            items.append(item)
        }
        return items
    }

    mutating func dictionary(_ wire: Baton_V1_Dictionary, depth: Int) throws(Problem) -> ValueDictionary {
        if depth >= maxDepth { suspicious = true }
        let entries = wire.entries
        var members = ValueDictionary(minimumCapacity: entries.count)
        for entry in entries {
            let member: Value
            do throws(Problem) {
                // An entry without a value is a Value with no kind.
                guard entry.hasValue else { throw Problem(reason: "value has no kind") }
                member = try value(entry.value, depth: depth + 1)
            } catch {
                var problem = error
                problem.steps.append(.key(entry.key))
                throw problem
            }
            members.appendUnchecked(entry.key, member)
        }
        if !suspicious, Self.hasRepeatedKey(entries, members) { suspicious = true }
        return members
    }

    /// Whether two entries share a key: pairwise for the usual handful, hashed beyond.
    private static func hasRepeatedKey(_ entries: [Baton_V1_Dictionary.Entry], _ members: ValueDictionary) -> Bool {
        let n = entries.count
        if n < 2 { return false }
        if n > 16 { return members.firstDuplicateKey != nil }
        for i in 1..<n {
            let key = entries[i].key
            for j in 0..<i where entries[j].key == key { return true }
        }
        return false
    }
}

/// Dates on the wire: microseconds since 1970-01-01T00:00:00Z.
package enum WireDate {
    /// 1970 → 2001 (Date's reference date) in microseconds.
    static let referenceOffset: Int64 = 978_307_200 * 1_000_000

    /// `date` in microseconds since 1970, rounded to the nearest; clamped to Int64's range
    /// (NaN gives 0).
    package static func microseconds(_ date: Date) -> Int64 {
        // From the reference date, where a Date's Double is exact, then shifted in integers.
        let sinceReference = (date.timeIntervalSinceReferenceDate * 1_000_000).rounded()
        guard let micros = Int64(exactly: sinceReference) else {
            if sinceReference.isNaN { return 0 }
            return sinceReference < 0 ? .min : .max
        }
        let (result, overflow) = micros.addingReportingOverflow(referenceOffset)
        return overflow ? .max : result
    }

    /// The date `microseconds` after 1970.
    package static func date(_ microseconds: Int64) -> Date {
        let (sinceReference, overflow) = microseconds.subtractingReportingOverflow(referenceOffset)
        if overflow { return Date(timeIntervalSince1970: Double(microseconds) / 1_000_000) }
        return Date(timeIntervalSinceReferenceDate: Double(sinceReference) / 1_000_000)
    }
}
