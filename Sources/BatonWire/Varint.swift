import NIOCore

/// Protobuf's unsigned base-128 varint: seven bits per byte, least significant group first,
/// the high bit set on every byte but the last.
public enum Varint {
    /// The longest encoding of a 64-bit value.
    public static let maxLength = 10

    /// The number of bytes `value` takes: 1 ... 10.
    @inlinable
    public static func encodedLength(_ value: UInt64) -> Int {
        // 1 + floor(bits / 7), with 0 taking one byte.
        let bits = 64 - (value | 1).leadingZeroBitCount
        return (bits + 6) / 7
    }

    /// Appends `value` to `buffer`.
    @inlinable
    public static func write(_ value: UInt64, into buffer: inout ByteBuffer) {
        if value < 0x80 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: value))
            return
        }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: maxLength) { out in
            var v = value
            var i = 0
            while v >= 0x80 {
                out[i] = UInt8(truncatingIfNeeded: v) | 0x80
                v >>= 7
                i += 1
            }
            out[i] = UInt8(truncatingIfNeeded: v)
            return i + 1
        }
    }

    /// Reads one varint from the front of `buffer`, moving its reader index past it. Returns nil,
    /// leaving `buffer` as it was, if the varint is not complete yet.
    ///
    /// - Throws: ``WireError/protocolError(_:)`` if the varint is longer than 10 bytes or does not
    ///   fit in 64 bits.
    public static func read(from buffer: inout ByteBuffer) throws(WireError) -> UInt64? {
        switch peek(buffer) {
        case .value(let value, let length):
            buffer.moveReaderIndex(forwardBy: length)
            return value
        case .incomplete:
            return nil
        case .tooLong:
            throw .protocolError("varint longer than 10 bytes")
        case .overflow:
            throw .protocolError("varint does not fit in 64 bits")
        }
    }

    /// What the front of a buffer holds.
    enum Peek: Equatable {
        case value(UInt64, length: Int)
        /// Fewer than 10 bytes, all with the continuation bit set.
        case incomplete
        /// 10 bytes, all with the continuation bit set.
        case tooLong
        /// A 10-byte varint whose last byte carries bits beyond the 64th.
        case overflow
    }

    /// Decodes the varint at the front of `buffer` without consuming it.
    static func peek(_ buffer: ByteBuffer) -> Peek {
        buffer.withUnsafeReadableBytes { peek($0) }
    }

    /// Decodes the varint at the front of `bytes`.
    static func peek(_ bytes: UnsafeRawBufferPointer) -> Peek {
        let n = min(bytes.count, maxLength)
        var value: UInt64 = 0
        var i = 0
        while i < n {
            let byte = bytes[i]
            if i == maxLength - 1 {
                // The 10th byte holds bit 63 only.
                if byte & 0x80 != 0 { return .tooLong }
                if byte > 1 { return .overflow }
            }
            value |= UInt64(byte & 0x7F) << UInt64(7 * i)
            if byte & 0x80 == 0 { return .value(value, length: i + 1) }
            i += 1
        }
        return .incomplete
    }
}
