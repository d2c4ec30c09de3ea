import BatonCore
import BatonWire
import Foundation
import NIOCore
import SwiftProtobuf
import Testing

/// Service frames take a short path both ways (Values straight to bytes and back, without the
/// generated types); it must write the same bytes and read the same results as the general one,
/// for every input, the odd and the malformed included.
@Suite("Service frames on the short path")
struct ServiceFrameTests {
    static let messages: [ValueDictionary] = [
        [:],
        ["Type": "ping", "n": .int(-5), "big": .int(.max), "d": .double(-0.0), "b": .bool(false), "t": .bool(true)],
        [
            "when": .date(Date(timeIntervalSince1970: 1_700_000_000.123456)),
            "u": .uuid(UUID(uuidString: "8E1F1A1C-3D7B-4E55-9D6C-0A1B2C3D4E5F")!), "raw": .bytes([0, 1, 255]),
            "empty": .bytes([]), "": .string(""), "ünï": .string("cödé ✓"),
        ],
        ["list": .array([.int(1), .int(2)]), "none": .array([]), "nested": .dictionary(["deep": .array([.dictionary(["x": .string("")])])])],
        ["long": .string(String(repeating: "y", count: 20_000)), "many": .array((0..<300).map { .int(Int64($0)) })],
    ]

    // MARK: writing

    /// The bytes SwiftProtobuf writes for `frame`, framed.
    static func reference(_ frame: Baton_V1_Frame) throws -> ByteBuffer {
        let payload: [UInt8] = try frame.serializedBytes()
        return withLengthPrefix(payload)
    }

    @Test("a ServiceRequest written from Values is SwiftProtobuf's bytes", arguments: messages.indices)
    func requestBytes(_ index: Int) throws {
        let message = Self.messages[index]
        var direct = ByteBuffer()
        try FrameEncoder.encode(
            .serviceRequest(channelID: 3, requestID: 300, message: ServiceMessage(message), timeout: 0), into: &direct, maxFrameSize: FrameLimits.hardLimit)
        let general = try Self.reference(.with {
            $0.serviceRequest = .with { $0.channelID = 3; $0.requestID = 300; $0.message = Baton_V1_Dictionary(message) }
        })
        #expect(direct == general)
    }

    @Test("a ServiceRequest whose message came checked is written back as it came", arguments: messages.indices)
    func checkedRequestBytes(_ index: Int) throws {
        let message = Self.messages[index]
        let payload = try Self.reference(.with {
            $0.serviceRequest = .with { $0.channelID = 3; $0.requestID = 300; $0.message = Baton_V1_Dictionary(message) }
        })
        var input = payload
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        guard case .frame(let frame)? = try decoder.decode(buffer: &input), case .serviceRequest(_, _, let checked, _) = frame else {
            Issue.record("not a service request")
            return
        }
        #expect(checked.isChecked)
        var echoed = ByteBuffer()
        try FrameEncoder.encode(frame, into: &echoed, maxFrameSize: FrameLimits.hardLimit)
        #expect(echoed == payload)
    }

    @Test("a ServiceResponse written from Values is SwiftProtobuf's bytes", arguments: messages.indices)
    func responseBytes(_ index: Int) throws {
        let message = Self.messages[index]
        for (status, withMessage, detail) in [(ResponseStatus.success, true, ""), (.failure, false, "why"), (.success, false, "x")] {
            var direct = ByteBuffer()
            let reply = ServiceReply(status: status, message: withMessage ? message : nil, detail: detail)
            try FrameEncoder.encode(.serviceResponse(channelID: 0, requestID: 9, reply: reply), into: &direct, maxFrameSize: FrameLimits.hardLimit)
            let general = try Self.reference(.with {
                $0.serviceResponse = .with {
                    $0.requestID = 9
                    $0.status = Baton_V1_ResponseStatus(status)
                    if withMessage { $0.message = Baton_V1_Dictionary(message) }
                    $0.detail = detail
                }
            })
            #expect(direct == general)
        }
    }

    @Test("over the limit: frameTooLarge, nothing written")
    func tooLarge() throws {
        var out = ByteBuffer()
        #expect(throws: WireError.self) {
            try FrameEncoder.encode(
                .serviceRequest(channelID: 1, requestID: 1, message: ServiceMessage(Self.messages[4]), timeout: 0), into: &out, maxFrameSize: 1000)
        }
        #expect(out.readableBytes == 0)
    }

    // MARK: reading

    /// How a read ended, comparable: the frame, or "malformed".
    enum Read: Equatable {
        case frame(Frame)
        case malformed
    }

    /// SwiftProtobuf, let nest deep enough to reach Value's own limit: a message nested past it
    /// is read as a message that breaks the Value rules (its request then gets a status), not
    /// as a malformed frame, on both paths.
    static let deep: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.messageDepthLimit = 256
        return options
    }()

    /// What SwiftProtobuf makes of `payload`, as a Baton frame.
    static func general(_ payload: [UInt8]) -> Read {
        guard let wire = try? Baton_V1_Frame(serializedBytes: payload, options: deep), let frame = try? Frame(wire: wire) else {
            return .malformed
        }
        return .frame(frame)
    }

    /// What Baton's decoder makes of `payload`.
    static func short(_ payload: [UInt8]) -> Read {
        var input = withLengthPrefix(payload)
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        guard let event = try? decoder.decode(buffer: &input), case .frame(let frame) = event else { return .malformed }
        return .frame(frame)
    }

    @Test("well-formed requests and responses read as SwiftProtobuf reads them", arguments: messages.indices)
    func wellFormed(_ index: Int) throws {
        let message = Self.messages[index]
        let request = try framedBytes(.with {
            $0.serviceRequest = .with { $0.channelID = 7; $0.requestID = 8; $0.message = Baton_V1_Dictionary(message) }
        })
        let response = try framedBytes(.with {
            $0.serviceResponse = .with { $0.requestID = 8; $0.status = .success; $0.message = Baton_V1_Dictionary(message); $0.detail = "d" }
        })
        for framedPayload in [request, response] {
            var buffer = ByteBuffer(bytes: framedPayload)
            _ = try Varint.read(from: &buffer)
            let payload = Array(buffer.readableBytesView)
            let short = Self.short(payload)
            #expect(short == Self.general(payload))
            if case .frame(.serviceRequest(_, _, let m, _)) = short {
                #expect(m.values == .success(message))
                #expect(m.isChecked)
            }
            if case .frame(.serviceResponse(_, _, let reply)) = short { #expect(reply == ServiceReply(status: .success, message: message, detail: "d")) }
        }
    }

    // Protobuf pieces for hand-made payloads.
    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out: [UInt8] = []
        while v >= 0x80 { out.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        return out + [UInt8(v)]
    }
    static func field(_ n: UInt64, varint v: UInt64) -> [UInt8] { varint(n << 3) + varint(v) }
    static func field(_ n: UInt64, _ bytes: [UInt8]) -> [UInt8] { varint(n << 3 | 2) + varint(UInt64(bytes.count)) + bytes }
    static func field(_ n: UInt64, _ text: String) -> [UInt8] { field(n, Array(text.utf8)) }
    static func entry(_ key: String, _ value: [UInt8]) -> [UInt8] { field(1, field(1, key) + field(2, value)) }
    static func request(_ message: [UInt8], head: [UInt8] = field(1, varint: 1) + field(2, varint: 2)) -> [UInt8] {
        field(9, head + field(3, message))
    }
    static func zigzag(_ i: Int64) -> UInt64 { UInt64(bitPattern: (i << 1) ^ (i >> 63)) }

    static let odd: [(String, [UInt8])] = {
        let one = field(1, "a"), two = field(1, "b")
        let int = field(2, varint: zigzag(4))
        var cases: [(String, [UInt8])] = [
            ("canonical", request(entry("k", one))),
            ("a value with two kinds: the last wins", request(entry("k", one + int))),
            ("a string seen twice", request(entry("k", one + two))),
            ("an entry without a value", request(field(1, field(1, "k")))),
            ("a value without a kind", request(entry("k", []))),
            ("the value before the key", request(field(1, field(2, one) + field(1, "k")))),
            ("a key seen twice", request(field(1, field(1, "j") + field(1, "k") + field(2, one)))),
            ("a value seen twice: merged", request(field(1, field(1, "k") + field(2, one) + field(2, int)))),
            ("a repeated key", request(entry("k", one) + entry("k", int))),
            ("a mixed array", request(entry("a", field(8, field(1, one) + field(1, int))))),
            ("an array seen twice: merged", request(entry("a", field(8, field(1, one)) + field(8, field(1, two))))),
            ("a dictionary seen twice: merged", request(entry("d", field(9, entry("x", one)) + field(9, entry("y", two))))),
            ("a uuid of 15 bytes", request(entry("u", field(6, [UInt8](repeating: 1, count: 15))))),
            ("a uuid of 16 bytes", request(entry("u", field(6, [UInt8](repeating: 1, count: 16))))),
            ("a string that is not UTF-8", request(entry("k", field(1, [0xC3, 0x28])))),
            ("a key that is not UTF-8", request(field(1, field(1, [0xFF]) + field(2, one)))),
            ("an unknown field in a value", request(entry("k", one + field(15, varint: 1)))),
            ("an unknown field in the request", request(entry("k", one), head: field(1, varint: 1) + field(12, varint: 5))),
            ("a known field with another wire type", request(entry("k", field(2, "x") + one))),
            ("ids out of order", request(entry("k", one), head: field(2, varint: 2) + field(1, varint: 1))),
            ("ids seen twice", request(entry("k", one), head: field(1, varint: 1) + field(1, varint: 3))),
            ("the message seen twice: merged", field(9, field(3, entry("a", one)) + field(3, entry("b", two)))),
            ("no message", field(9, field(1, varint: 1))),
            ("an empty request", field(9, [])),
            ("a second body after it", request(entry("k", one)) + field(12, field(1, varint: 1))),
            ("a request then a response body: the last wins", request(entry("k", one)) + field(10, field(3, varint: 1))),
            ("a truncated value", field(9, field(3, field(1, field(1, "k") + varint(2 << 3 | 2) + varint(10) + [1])))),
            ("a date, a double, a bool, bytes", request(
                entry("t", field(5, varint: zigzag(-7))) + entry("d", varint(3 << 3 | 1) + [0, 0, 0, 0, 0, 0, 0xF0, 0x3F])
                    + entry("b", field(4, varint: 2)) + entry("r", field(7, [9, 8])))),
            ("a response", field(10, field(1, varint: 1) + field(2, varint: 2) + field(3, varint: 1) + field(4, entry("k", one)) + field(5, "ok"))),
            ("a response with an unknown status", field(10, field(2, varint: 2) + field(3, varint: 999))),
            ("a response with a mixed array", field(10, field(3, varint: 1) + field(4, entry("a", field(8, field(1, one) + field(1, int)))))),
            ("a response, fields out of order", field(10, field(5, "ok") + field(2, varint: 2))),
        ]
        // 70 and 31 dictionaries deep: past Value's limit of 30; 30 deep, at it.
        var deep = entry("leaf", int)
        for _ in 0..<69 { deep = entry("d", field(9, deep)) }
        cases.append(("nested 70 deep", request(deep)))
        var over = entry("leaf", int)
        for _ in 0..<30 { over = entry("d", field(9, over)) }
        cases.append(("nested 31 deep", request(over)))
        var ok = entry("leaf", int)
        for _ in 0..<29 { ok = entry("d", field(9, ok)) }
        cases.append(("nested 30 deep", request(ok)))
        var wide: [UInt8] = []
        for i in 0..<20 { wide += entry("k\(i % 19)", one) }
        cases.append(("20 members, one key twice", request(wide)))
        // Past the keys a check keeps on the stack (32): gathered again.
        var many: [UInt8] = [], manyRepeated: [UInt8] = []
        for i in 0..<40 {
            many += entry("k\(i)", one)
            manyRepeated += entry(i == 39 ? "k0" : "k\(i)", one)
        }
        cases.append(("40 members", request(many)))
        cases.append(("40 members, the first key again last", request(manyRepeated)))
        return cases
    }()

    @Test("odd and malformed service frames: read as SwiftProtobuf reads them, or refused as it refuses them", arguments: odd.indices)
    func oddFrames(_ index: Int) {
        let (name, payload) = Self.odd[index]
        let short = Self.short(payload), general = Self.general(payload)
        #expect(short == general, "\(name)")
    }

    @Test("fields the receiver does not know keep a request on the short path: its message stays in its checked bytes")
    func unknownFieldsStayOnTheShortPath() {
        let one = Self.field(1, "a")
        let payloads = [
            Self.request(Self.entry("k", one), head: Self.field(1, varint: 1) + Self.field(2, varint: 2) + Self.field(4, varint: 30_000)),
            Self.request(Self.entry("k", one), head: Self.field(1, varint: 1) + Self.field(12, "a new field")),
            Self.request(Self.entry("k", one + Self.field(15, varint: 1)) + Self.field(2, varint: 9)),
            Self.request(Self.entry("k", one), head: Self.field(2, varint: 2) + Self.field(1, varint: 1)),
        ]
        for payload in payloads {
            guard case .frame(.serviceRequest(let channel, let request, let message, _)) = Self.short(payload) else {
                Issue.record("not read: \(payload)")
                continue
            }
            #expect(channel == 1 && request == 2 || request == 0 || channel == 0)
            #expect(message.isChecked, "\(payload)")
            #expect(message.values == .success(["k": "a"]))
        }
    }

    @Test("strings: well-formed UTF-8 is read, anything else (RFC 3629) is a malformed frame")
    func utf8() throws {
        let valid: [[UInt8]] = [
            [0x7F], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80],
            [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], Array("abcdefghé".utf8),
        ]
        let invalid: [[UInt8]] = [
            [0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF0, 0x80, 0x80, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xC2], [0xE0, 0xA0], Array("abcdefgh".utf8) + [0xC3],
        ]
        for bytes in valid + invalid {
            let payload = Self.field(1, Self.field(3, bytes))  // Hello.device_name
            var input = withLengthPrefix(payload)
            var decoder = FrameDecoder()
            let event = try? decoder.decode(buffer: &input)
            if valid.contains(bytes) {
                guard case .frame(.hello(let hello))? = event else {
                    Issue.record("\(bytes) refused")
                    continue
                }
                #expect(Array(hello.deviceName.utf8) == bytes)
            } else {
                #expect(event == nil, "\(bytes) accepted")
            }
        }
    }
}
