extension Sequence<UInt8> {
    /// (Public: the broker names sessions and tokens with it too.)
    /// The bytes in lower-case hex, two digits each: fingerprints, serial numbers, names.
    public var hexDigits: String {
        map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
