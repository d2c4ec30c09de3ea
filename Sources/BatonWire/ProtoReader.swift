#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// Reads protobuf's binary format from bytes that stay put while it reads, by proto3's rules:
/// fields in any order, unknown fields skipped, the last of a repeated scalar wins, a repeated
/// message field merges. Every malformation is a ``ProtoReader/Malformed`` naming it.
@usableFromInline
package struct ProtoReader {
    /// Why bytes are not a message.
    @usableFromInline
    package struct Malformed: Error, CustomStringConvertible {
        @usableFromInline package var description: String
        @usableFromInline
        package init(_ description: String) { self.description = description }
    }

    @usableFromInline let base: UnsafeRawPointer?
    @usableFromInline var index: Int
    @usableFromInline let end: Int
    /// Messages nested around this one; capped so hostile nesting cannot exhaust the stack.
    @usableFromInline let depth: Int
    /// The number of the field ``nextField()`` read last: a group's end must repeat it.
    @usableFromInline var lastNumber = 0

    /// The limit stock protobuf parsers keep (upb, SwiftProtobuf): a frame nested deeper is
    /// malformed for them too. Values stop at their own limit first (``Value/maxDepth``, each
    /// level 2 or 3 of these), so a message nested too deep gets a status naming the path, not
    /// this.
    @usableFromInline
    package static let maxDepth = 100

    @inlinable
    package init(_ bytes: UnsafeRawBufferPointer, depth: Int = 0) {
        self.base = bytes.baseAddress
        self.index = 0
        self.end = bytes.count
        self.depth = depth
    }

    @inlinable
    package var isAtEnd: Bool { index >= end }

    /// How many bytes are left to read.
    package var remaining: Int { end - index }

    /// The next field's number and wire type, or nil at the end.
    @inlinable @inline(__always)
    package mutating func nextField() throws(Malformed) -> (number: Int, wireType: UInt64)? {
        guard index < end else { return nil }
        let start = index
        let key = try varint()
        // A key takes at most 5 bytes (29 bits of number, 3 of wire type), as protobuf's parsers
        // hold it.
        guard index - start <= 5 else { throw Malformed("field key longer than 5 bytes") }
        let number = key >> 3
        guard number != 0, number <= 536_870_911 else { throw Malformed("field number \(number)") }
        lastNumber = Int(number)
        return (Int(number), key & 7)
    }

    @inlinable @inline(__always)
    package mutating func varint() throws(Malformed) -> UInt64 {
        guard let base else { throw Malformed("truncated varint") }
        var value: UInt64 = 0
        var shift: UInt64 = 0
        // Bits past the 64th in a tenth byte are dropped, as protobuf's parsers do.
        while index < end, shift < 70 {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Malformed(shift >= 70 ? "varint longer than 10 bytes" : "truncated varint")
    }

    @inlinable
    package mutating func fixed64() throws(Malformed) -> UInt64 {
        guard let base, end - index >= 8 else { throw Malformed("truncated fixed64") }
        let value = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        index += 8
        return UInt64(littleEndian: value)
    }

    /// The bytes of a length-delimited field, valid as long as the reader's.
    @inlinable @inline(__always)
    package mutating func lengthDelimited() throws(Malformed) -> UnsafeRawBufferPointer {
        let length = try varint()
        guard length <= UInt64(end - index), let base else {
            if length == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
            throw Malformed("length-delimited field of \(length) bytes runs past the end")
        }
        let bytes = UnsafeRawBufferPointer(start: base + index, count: Int(length))
        index += Int(length)
        return bytes
    }

    /// Skips a field of a number this side does not know.
    @inlinable
    package mutating func skip(_ wireType: UInt64) throws(Malformed) {
        switch wireType {
        case 0: _ = try varint()
        case 1: _ = try fixed64()
        case 2: _ = try lengthDelimited()
        case 5:
            guard end - index >= 4 else { throw Malformed("truncated fixed32") }
            index += 4
        case 3: try skipGroup(lastNumber, nesting: 1)
        case 4: throw Malformed("the end of group \(lastNumber), which did not start")
        default: throw Malformed("wire type \(wireType)")
        }
    }

    /// Skips a group (proto2's wire types 3 and 4, which proto3 parsers still skip as unknown
    /// fields) up to its end, which must name the same field; groups inside it as well.
    @usableFromInline
    mutating func skipGroup(_ number: Int, nesting: Int) throws(Malformed) {
        guard depth + nesting < Self.maxDepth else { throw Malformed("messages nested deeper than \(Self.maxDepth)") }
        while let f = try nextField() {
            switch f.wireType {
            case 4:
                guard f.number == number else { throw Malformed("group \(number) ended as group \(f.number)") }
                return
            case 3: try skipGroup(f.number, nesting: nesting + 1)
            default: try skip(f.wireType)
            }
        }
        throw Malformed("group \(number) has no end")
    }

    // MARK: typed reads; the caller has matched the field's wire type to the schema's

    mutating func uint64(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> UInt64 {
        try varint()
    }

    mutating func uint32(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> UInt32 {
        UInt32(truncatingIfNeeded: try varint())
    }

    mutating func bool(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> Bool {
        try varint() != 0
    }

    /// An enum's number, as protobuf's int32.
    mutating func enumValue(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> Int {
        Int(Int32(truncatingIfNeeded: try varint()))
    }

    mutating func sint64(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> Int64 {
        Self.zigZag(try varint())
    }

    /// A sint64's value from its varint.
    @inlinable @inline(__always)
    package static func zigZag(_ raw: UInt64) -> Int64 {
        Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    mutating func double(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> Double {
        Double(bitPattern: try fixed64())
    }

    mutating func string(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> String {
        let bytes = try lengthDelimited()
        guard UTF8Validation.isValid(bytes) else { throw Malformed("field \(field.number) is not valid UTF-8") }
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func bytes(_ field: (number: Int, wireType: UInt64)) throws(Malformed) -> Data {
        Data(try lengthDelimited())
    }

    /// Merges a nested message into `message`.
    @inline(__always)
    mutating func merge<M: WireMessage>(_ field: (number: Int, wireType: UInt64), into message: inout M) throws(Malformed) {
        guard depth < Self.maxDepth else { throw Malformed("messages nested deeper than \(Self.maxDepth)") }
        var nested = ProtoReader(try lengthDelimited(), depth: depth + 1)
        try message.merge(from: &nested)
    }

    /// A nested message on its own (a repeated element).
    @inline(__always)
    mutating func message<M: WireMessage>(_ field: (number: Int, wireType: UInt64), as type: M.Type = M.self) throws(Malformed) -> M {
        var message = M()
        try merge(field, into: &message)
        return message
    }
}

/// A message with a hand-written codec, byte for byte what SwiftProtobuf writes and reads.
protocol WireMessage {
    init()
    /// Writes the fields, in number order, proto3 defaults left out.
    func encode(to writer: inout ProtoWriter)
    /// Reads fields until the reader's end, merging them into `self`.
    mutating func merge(from reader: inout ProtoReader) throws(ProtoReader.Malformed)
}

/// UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF), with a
/// fast path for ASCII, which most keys and values are.
@usableFromInline
package enum UTF8Validation {
    @usableFromInline
    package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        guard let base = bytes.baseAddress else { return true }
        while i < n {
            // Eight ASCII bytes at a time.
            if n - i >= 8, base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
                continue
            }
            let b0 = bytes[i]
            if b0 < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch b0 {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return false
            }
            guard n - i >= length else { return false }
            let b1 = bytes[i + 1]
            guard b1 >= low, b1 <= high else { return false }
            for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { return false }
            i += length
        }
        return true
    }
}
