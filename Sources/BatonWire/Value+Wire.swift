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
    public init(wire: Baton_V1_Value, path: String = "message", maxDepth: Int = Value.maxDepth) throws(ValueError) {
        var writer = ProtoWriter()
        wire.encode(to: &writer)
        var builder = ValueBuilder()
        let outcome = writer.withBytes { try? ValueReader.read(value: $0, into: &builder, mode: .lenient, path: path) }
        if case .invalid(let error)? = outcome { throw error }
        guard let value = builder.value else { throw ValueError(path: path, reason: "value has no kind") }
        try value.validate(path: path, maxDepth: maxDepth)
        self = value
    }
}

extension ValueDictionary {
    /// The dictionary `wire` carries, refusing what breaks the Value rules; see
    /// ``Value/init(wire:path:maxDepth:)``. `path` names the dictionary itself.
    public init(wire: Baton_V1_Dictionary, path: String = "message", maxDepth: Int = Value.maxDepth) throws(ValueError) {
        var writer = ProtoWriter()
        wire.encode(to: &writer)
        var builder = ValueBuilder()
        let outcome = writer.withBytes { try? ValueReader.read(dictionary: $0, into: &builder, mode: .lenient, path: path) }
        if case .invalid(let error)? = outcome { throw error }
        try Value.dictionary(builder.dictionary).validate(path: path, maxDepth: maxDepth)
        self = builder.dictionary
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
