import BatonCore
import BatonWire
import NIOCore
import SwiftProtobuf
import Testing

/// Inputs `scripts/fuzz frame` and `scripts/fuzz value` found, kept so that what they showed
/// stays fixed: each was a difference from SwiftProtobuf, mended since.
@Suite("Wire fuzzing regressions")
struct WireFuzzRegressionTests {
    /// `payload` (one serialized Frame) with its length prefix.
    static func framed(_ payload: [UInt8]) -> ByteBuffer {
        ByteBuffer(bytes: [UInt8(payload.count)] + payload)
    }

    /// A ServiceRequest frame (channel 1, request 1) whose message is the Dictionary `fields`.
    static func serviceRequest(_ fields: [UInt8]) -> [UInt8] {
        let body: [UInt8] = [0x08, 0x01, 0x10, 0x01, 0x1A, UInt8(fields.count)] + fields
        return [0x4A, UInt8(body.count)] + body
    }

    static func read(_ payload: [UInt8]) throws -> Frame? {
        var buffer = framed(payload)
        var decoder = FrameDecoder()
        guard case .frame(let frame)? = try decoder.decode(buffer: &buffer) else { return nil }
        return frame
    }

    /// An entry with neither key nor value (`0a 00`: a Value rule broken), then an entry that is
    /// not protobuf (`0a 01 00`: field number 0). SwiftProtobuf refuses the frame; Baton's strict
    /// read stops at the broken value and never reaches the malformed entry, so the request is
    /// answered `failure` instead of being a malformed frame (Goodbye, close) as any other is.
    @Test("malformed bytes after a broken value make the frame malformed, as SwiftProtobuf has it")
    func malformedAfterBrokenValue() throws {
        let payload = Self.serviceRequest([0x0A, 0x00, 0x0A, 0x01, 0x00])
        #expect(throws: (any Error).self) { try Baton_V1_Frame(serializedBytes: payload) }
        #expect(throws: WireError.self) { _ = try Self.read(payload) }
    }

    /// An entry whose array mixes kinds (a rule broken), then an entry with its key twice (a
    /// field proto3 merges: the last key wins). The strict read stops at the array (broken); the
    /// lenient read that finds the words for it stops at the repeated key (odd), and
    /// ValueReader.values(ofDictionary:) takes what it had read by then, nothing, as the message:
    /// the request is delivered as an empty message instead of being answered `failure`.
    @Test("a broken message with a field proto3 merges is still broken, in SwiftProtobuf's words")
    func brokenAndOdd() throws {
        let fields: [UInt8] = [
            0x0A, 0x10, 0x0A, 0x01, 0x6C, 0x12, 0x0B, 0x42, 0x09, 0x0A, 0x02, 0x10, 0x02, 0x0A, 0x03, 0x0A, 0x01, 0x78,  // l: [1, "x"]
            0x0A, 0x0A, 0x0A, 0x01, 0x62, 0x0A, 0x01, 0x63, 0x12, 0x02, 0x10, 0x02,  // key b, key c: 1
        ]
        let payload = Self.serviceRequest(fields)
        let reference = try Baton_V1_Frame(serializedBytes: payload)
        let expected = Result { () throws(ValueError) in try ValueDictionary(wire: reference.serviceRequest.message, path: "message") }
        #expect(throws: ValueError.self) { try expected.get() }
        guard case .serviceRequest(1, 1, let message, 0)? = try Self.read(payload) else {
            Issue.record("not read as the service request")
            return
        }
        #expect(message.values == expected)
    }

    /// The same with the repeated key's first spelling not UTF-8: SwiftProtobuf refuses the
    /// frame (it checks every string it reads); Baton delivers an empty message.
    @Test("a broken message with a merged field that is not UTF-8 is a malformed frame")
    func brokenAndOddNotUTF8() throws {
        let fields: [UInt8] = [
            0x0A, 0x10, 0x0A, 0x01, 0x6C, 0x12, 0x0B, 0x42, 0x09, 0x0A, 0x02, 0x10, 0x02, 0x0A, 0x03, 0x0A, 0x01, 0x78,  // l: [1, "x"]
            0x0A, 0x0A, 0x0A, 0x01, 0xFF, 0x0A, 0x01, 0x63, 0x12, 0x02, 0x10, 0x02,  // key "\u{FF}", key c: 1
        ]
        let payload = Self.serviceRequest(fields)
        #expect(throws: (any Error).self) { try Baton_V1_Frame(serializedBytes: payload) }
        #expect(throws: WireError.self) { _ = try Self.read(payload) }
    }

    /// A group (wire types 3 and 4, `0b 0c`: start and end of field 1) where a DescribeRequest's
    /// field 1 is a varint. SwiftProtobuf skips it as an unknown field (a known field number
    /// with another wire type is one), so a frame SwiftProtobuf reads; ProtoReader.skip refuses
    /// wire types 3 and 4, so Baton's hand codec calls the frame malformed.
    @Test("a group is skipped as an unknown field, as SwiftProtobuf skips it")
    func groupInAFrameIsSkipped() throws {
        let payload: [UInt8] = [0x1A, 0x02, 0x0B, 0x0C]
        let reference = try Baton_V1_Frame(serializedBytes: payload)
        #expect(reference.describeRequest.requestID == 0)
        let expected = try Frame(wire: reference)
        let frame = try Self.read(payload)
        #expect(frame == expected)
    }

    /// The same in a service request's message: an unknown field 14 as an empty group
    /// (`73 74`). SwiftProtobuf reads an empty message; ValueReader refuses the frame.
    @Test("a group in a message is skipped as an unknown field, as SwiftProtobuf skips it")
    func groupInAMessageIsSkipped() throws {
        let payload = Self.serviceRequest([0x73, 0x74])
        let reference = try Baton_V1_Frame(serializedBytes: payload)
        #expect(reference.serviceRequest.message.entries.isEmpty)
        guard case .serviceRequest(1, 1, let message, 0)? = try Self.read(payload) else {
            Issue.record("not read as the service request")
            return
        }
        #expect(message.values == .success([:]))
    }

    /// A field key (tag) written in more than 5 bytes: `88 80 80 80 80 00` is field 1, wire
    /// type 0, in 6. A key is a 32-bit varint: SwiftProtobuf refuses one longer than 5 bytes, as
    /// upb does; ProtoReader.nextField reads keys as 64-bit varints and takes it. In a message
    /// (here a service request's) or a frame of the general path (here a DescribeRequest).
    @Test("a field key longer than 5 bytes makes the frame malformed, as SwiftProtobuf has it")
    func longFieldKey() throws {
        let key: [UInt8] = [0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0A]
        for payload in [Self.serviceRequest(key), [0x1A, UInt8(key.count)] + key] {
            #expect(throws: (any Error).self) { try Baton_V1_Frame(serializedBytes: payload) }
            #expect(throws: WireError.self) { _ = try Self.read(payload) }
        }
    }
}
