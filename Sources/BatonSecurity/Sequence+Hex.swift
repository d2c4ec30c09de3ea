extension Sequence<UInt8> {
    /// The bytes in lower-case hex, two digits each: fingerprints, serial numbers, names.
    var hexDigits: String {
        map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
