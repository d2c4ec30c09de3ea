#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// Writes protobuf's binary format the way SwiftProtobuf does (fields in number order, proto3
/// defaults left out) into memory of its own, then hands the bytes over in one copy. Writing
/// byte by byte through `ByteBuffer`'s checked API, or through SwiftProtobuf's generic
/// visitors, cost tens of thousands of instructions per request; this costs a few hundred.
package struct ProtoWriter: ~Copyable {
    /// Protobuf wire types.
    enum WireType: UInt64 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
    }

    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        self.base = .allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit {
        base.deallocate()
    }

    /// Calls `body` with what was written.
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Appends what was written to `buffer`.
    func append(to buffer: inout ByteBuffer) {
        buffer.writeBytes(UnsafeRawBufferPointer(start: base, count: count))
    }

    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(count + n) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        reserve(Varint.maxLength)
        var v = value
        while v >= 0x80 {
            base.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: count, as: UInt8.self)
            count += 1
            v >>= 7
        }
        base.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func tag(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    @inline(__always)
    mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    // MARK: fields that proto3 leaves out at their default

    mutating func uint64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        presentVarint(field, value)
    }

    mutating func uint32(_ field: Int, _ value: UInt32) {
        uint64(field, UInt64(value))
    }

    mutating func bool(_ field: Int, _ value: Bool) {
        uint64(field, value ? 1 : 0)
    }

    /// An enum's number; negative numbers take ten bytes, as protobuf's int32 does.
    mutating func enumValue(_ field: Int, _ rawValue: Int) {
        uint64(field, UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: rawValue))))
    }

    mutating func string(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        presentString(field, value)
    }

    mutating func bytes(_ field: Int, _ value: Data) {
        guard !value.isEmpty else { return }
        presentBytes(field, value)
    }

    mutating func strings(_ field: Int, _ values: [String]) {
        for value in values { presentString(field, value) }
    }

    // MARK: fields written even at their default (oneof members, repeated elements)

    mutating func presentString(_ field: Int, _ value: String) {
        tag(field, .lengthDelimited)
        // Native strings, small ones included, lend their bytes without a copy.
        let lent: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            varint(UInt64(bytes.count))
            raw(UnsafeRawBufferPointer(bytes))
        }
        guard lent == nil else { return }
        var value = value
        value.withUTF8 { bytes in
            varint(UInt64(bytes.count))
            raw(UnsafeRawBufferPointer(bytes))
        }
    }

    mutating func presentBytes(_ field: Int, _ value: Data) {
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        value.withUnsafeBytes { raw($0) }
    }

    mutating func presentVarint(_ field: Int, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    mutating func presentSInt64(_ field: Int, _ value: Int64) {
        presentVarint(field, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func presentDouble(_ field: Int, _ value: Double) {
        tag(field, .fixed64)
        reserve(8)
        base.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: count, as: UInt64.self)
        count += 8
    }

    /// A nested message: its tag, then its length and fields.
    @inline(__always)
    mutating func message<M: WireMessage>(_ field: Int, _ message: M) {
        tag(field, .lengthDelimited)
        lengthPrefixed(message)
    }

    /// `message`'s length, then its fields; returns the length. The fields are written after a
    /// one-byte length, and moved along once if the length needs more bytes.
    @discardableResult
    mutating func lengthPrefixed<M: WireMessage>(_ message: M) -> Int {
        reserve(1)
        let lengthAt = count
        count += 1
        message.encode(to: &self)
        return finishLengthPrefix(at: lengthAt)
    }

    /// As ``lengthPrefixed(_:)-(M)``, for the fields `body` writes.
    @discardableResult
    mutating func lengthPrefixed(_ body: (inout ProtoWriter) -> Void) -> Int {
        reserve(1)
        let lengthAt = count
        count += 1
        body(&self)
        return finishLengthPrefix(at: lengthAt)
    }

    /// Writes the length of what follows the byte kept at `lengthAt` there, moving it along if
    /// the length needs more than that byte; returns the length.
    private mutating func finishLengthPrefix(at lengthAt: Int) -> Int {
        let start = lengthAt + 1
        let length = count - start
        if length < 0x80 {
            base.storeBytes(of: UInt8(length), toByteOffset: lengthAt, as: UInt8.self)
            return length
        }
        let extra = Varint.encodedLength(UInt64(length)) - 1
        reserve(extra)
        (base + start + extra).copyMemory(from: base + start, byteCount: length)
        var v = UInt64(length)
        var at = lengthAt
        while v >= 0x80 {
            base.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: at, as: UInt8.self)
            at += 1
            v >>= 7
        }
        base.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: at, as: UInt8.self)
        count += extra
        return length
    }
}
