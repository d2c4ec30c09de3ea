/// A JSON document (RFC 8259), with object members kept in order.
///
/// Integers that fit `Int64` are kept apart from doubles so they survive a round trip
/// exactly. A `.double` must be finite: JSON cannot represent NaN or infinity, and
/// ``serialized(pretty:sortKeys:)`` traps on them (``Value/json(path:)`` rejects them first).
public enum JSON: Sendable, Equatable {
    // Not `indirect`: arrays already give the recursion its indirection, and boxing every
    // scalar made parsing a third slower.

    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits `Int64`.
    case int(Int64)
    /// Any other number; must be finite.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSON])
    /// An object, members in document order. Keys are unique when parsed; a hand-built
    /// object with repeated keys is written as is.
    case object([Member])

    /// One `"key": value` pair of an object.
    public struct Member: Sendable, Equatable {
        /// The member's name.
        public var key: String
        /// The member's value.
        public var value: JSON

        /// Creates the member `key: value`.
        public init(_ key: String, _ value: JSON) {
            self.key = key
            self.value = value
        }
    }
}

extension JSON {
    /// The value of the member named `key` if this is an object that has one, else `nil`.
    /// With repeated keys (only possible in a hand-built object) the last one wins.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The element at `index` (0-based, as Swift counts) if this is an array that long, else `nil`.
    public subscript(index: Int) -> JSON? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string if this is `.string`, else `nil`.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer if this is `.int`, else `nil` (a `.double` is not converted).
    public var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    /// The number if this is `.double` or `.int` (converted, possibly rounded), else `nil`.
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }

    /// The boolean if this is `.bool`, else `nil`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements if this is `.array`, else `nil`.
    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The members if this is `.object`, else `nil`.
    public var objectValue: [Member]? {
        if case .object(let m) = self { return m }
        return nil
    }
}
