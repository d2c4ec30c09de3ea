extension ValueDictionary {
    /// The string at `key`, if it is one.
    public func string(_ key: String) -> String? {
        if case .string(let value)? = self[key] { return value }
        return nil
    }

    /// The number at `key` (an integer or a double), if it is one.
    public func number(_ key: String) -> Double? {
        switch self[key] {
        case .int(let value)?: Double(value)
        case .double(let value)?: value
        default: nil
        }
    }

    /// The boolean at `key`, if it is one.
    public func bool(_ key: String) -> Bool? {
        if case .bool(let value)? = self[key] { return value }
        return nil
    }
}
