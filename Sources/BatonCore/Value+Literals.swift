// Literal conformances so tests and callers can write `["a": 1, "b": [true]]`.

extension Value: ExpressibleByStringLiteral {
    /// Creates a ``Value/string(_:)``.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension Value: ExpressibleByIntegerLiteral {
    /// Creates a ``Value/int(_:)``.
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension Value: ExpressibleByFloatLiteral {
    /// Creates a ``Value/double(_:)``.
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension Value: ExpressibleByBooleanLiteral {
    /// Creates a ``Value/bool(_:)``.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension Value: ExpressibleByArrayLiteral {
    /// Creates a ``Value/array(_:)``; the literal is not validated.
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
}

extension Value: ExpressibleByDictionaryLiteral {
    /// Creates a ``Value/dictionary(_:)``; for a repeated key the last value wins.
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .dictionary(ValueDictionary(elements))
    }
}
