extension JSON {
    /// The JSON text of this document.
    ///
    /// Compact by default (`{"a":1,"b":[true,null]}`). `pretty` indents by 2 spaces, puts each
    /// element and member on its own line, writes `"key": value` and empty containers as `{}`
    /// / `[]`, with no trailing newline. `sortKeys` orders members by key (by Unicode scalars)
    /// instead of keeping their order.
    ///
    /// Doubles are written in their shortest round-trip form, always with a fraction or
    /// exponent (`1.0`, `1e+100`) so they read back as doubles. Strings escape `"`, `\`,
    /// control characters and U+2028/U+2029; other non-ASCII text is written as UTF-8.
    ///
    /// - Precondition: every `.double` is finite; NaN and infinity have no JSON form and trap.
    public func serialized(pretty: Bool = false, sortKeys: Bool = false) -> String {
        var writer = JSONWriter(pretty: pretty, sortKeys: sortKeys)
        writer.write(self, indent: 0)
        return String(decoding: writer.out, as: UTF8.self)
    }
}
