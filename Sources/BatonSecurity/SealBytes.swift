/// Reading the sealed protocol's big-endian fields off a byte array; every read is nil when the
/// bytes run out, so truncated input is refused, never trapped on.
struct SealReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8() -> UInt8? { take(1)?.first }

    mutating func integer<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) -> T? {
        take(MemoryLayout<T>.size)?.reduce(T(0)) { $0 << 8 | T($1) }
    }

    /// A field prefixed by its length in a u8.
    mutating func short() -> ArraySlice<UInt8>? { u8().flatMap { take(Int($0)) } }

    /// A device id: a u8 length, then 1 to 64 bytes of UTF-8.
    mutating func deviceID() -> String? {
        guard let field = short(), !field.isEmpty, field.count <= SealHandshake.maximumIDLength, let id = String(validating: field, as: UTF8.self) else { return nil }
        return id
    }
}

extension Array where Element == UInt8 {
    mutating func append<T: FixedWidthInteger>(bigEndian value: T) {
        var big = value.bigEndian
        Swift.withUnsafeBytes(of: &big) { append(contentsOf: $0) }
    }

    /// `field` after its length in a u8 (the caller keeps it under 256 bytes).
    mutating func append(short field: some Collection<UInt8>) {
        append(UInt8(field.count))
        append(contentsOf: field)
    }
}
