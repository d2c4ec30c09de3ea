extension JSON {
    /// Parses one JSON document from UTF-8 bytes, strictly per RFC 8259.
    ///
    /// Accepted: one value with optional surrounding whitespace (space, tab, CR, LF).
    /// Rejected: trailing commas, comments, leading zeros, `NaN`/`Infinity`, a byte order mark,
    /// invalid escapes, lone surrogates, raw control characters in strings, invalid UTF-8,
    /// numbers beyond `Double`'s range, nesting deeper than 512 arrays/objects.
    ///
    /// A number without fraction or exponent that fits `Int64` becomes `.int` (`-0` is
    /// `.int(0)`); any other number becomes `.double`. For a repeated object key the last
    /// value wins, kept at the position of the first.
    ///
    /// - Throws: ``JSONError`` locating the first problem.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONError) -> JSON {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) -> JSON in
                var parser = JSONParser(buffer)
                return try parser.parseDocument()
            }
        }
        if let contiguous { return try contiguous.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) -> JSON in
                var parser = JSONParser(buffer)
                return try parser.parseDocument()
            }
        }.get()
    }

    /// Parses one JSON document from `text`; the rules are those of the byte overload.
    ///
    /// - Throws: ``JSONError`` locating the first problem.
    public static func parse(_ text: String) throws(JSONError) -> JSON {
        try parse(text.utf8)
    }
}
