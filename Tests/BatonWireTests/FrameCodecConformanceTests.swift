import BatonCore
import BatonWire
import Foundation
import NIOCore
import SwiftProtobuf
import Testing

/// The hand-written codec must write exactly SwiftProtobuf's bytes and read whatever it writes,
/// so a client generated from Protocol/baton.proto in any language speaks to Baton.
@Suite("Frame codec matches SwiftProtobuf")
struct FrameCodecConformanceTests {
    /// One frame of every kind, with fields at defaults and not, long and multi-byte lengths,
    /// every Value kind, unknown enum numbers.
    static let frames: [Baton_V1_Frame] = {
        let value: ValueDictionary = [
            "s": "text ünïcödé", "i": .int(-5), "big": .int(.max), "d": .double(-0.0), "inf": .double(-.infinity),
            "b": .bool(false), "t": .date(Date(timeIntervalSince1970: 1_700_000_000.123456)),
            "u": .uuid(UUID(uuidString: "8E1F1A1C-3D7B-4E55-9D6C-0A1B2C3D4E5F")!), "raw": .bytes([0, 1, 255]),
            "empty": .bytes([]), "zero": .int(0), "list": .array([.int(1), .int(2)]), "none": .array([]),
            "nested": .dictionary(["deep": .array([.dictionary(["x": .string("")])])]),
            "long": .string(String(repeating: "y", count: 20_000)),
        ]
        var device = Baton_V1_Device()
        device.id = "id-1"
        device.name = "Living Room TV"
        device.kind = "tv"
        device.platform = "linux"
        var app = Baton_V1_App()
        app.id = "player"
        app.schemes = ["media", "http"]
        app.services = ["remote"]
        app.attributes = Baton_V1_Dictionary(["version": "2"])
        app.anonymous = true
        var frames: [Baton_V1_Frame] = []
        frames.append(.with { $0.hello = .with { $0.protocolVersion = 1; $0.deviceID = "abc"; $0.maxFrameSize = 1 << 20 } })
        frames.append(.with { $0.hello = Baton_V1_Hello() })
        frames.append(.with { $0.helloAck = .with { $0.protocolVersion = 1; $0.device = device; $0.maxFrameSize = 300 } })
        frames.append(.with { $0.describeRequest = .with { $0.requestID = 0 } })
        frames.append(.with { $0.describeResponse = .with { $0.requestID = .max; $0.device = device; $0.apps = [app, app] } })
        frames.append(.with {
            $0.launchRequest = .with {
                $0.requestID = 7; $0.uri = "media://x"; $0.appID = "player"; $0.fallbackUri = "https://e"
                $0.preferredAppIds = ["a", "", "b"]; $0.data = Baton_V1_Dictionary(value)
            }
        })
        frames.append(.with { $0.launchRequest = .with { $0.data = Baton_V1_Dictionary() } })
        frames.append(.with { $0.launchResponse = .with { $0.requestID = 7; $0.status = .valueSetTooLarge; $0.detail = "d" } })
        frames.append(.with { $0.launchResponse = .with { $0.status = .UNRECOGNIZED(-3) } })
        frames.append(.with { $0.openServiceRequest = .with { $0.requestID = 1; $0.channelID = 300; $0.serviceName = "s"; $0.appID = "a" } })
        frames.append(.with { $0.openServiceResponse = .with { $0.requestID = 1; $0.status = .notAuthorized } })
        frames.append(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = 2; $0.message = Baton_V1_Dictionary(value) } })
        frames.append(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = 2 } })
        frames.append(.with {
            $0.serviceResponse = .with {
                $0.channelID = 1; $0.requestID = 2; $0.status = .success; $0.message = Baton_V1_Dictionary(["k": "v"])
                $0.detail = "ok"
            }
        })
        frames.append(.with { $0.closeService = .with { $0.channelID = 9; $0.status = .canceled } })
        frames.append(.with { $0.ping = .with { $0.nonce = 1 << 40 } })
        frames.append(.with { $0.pong = Baton_V1_Pong() })
        frames.append(.with { $0.goodbye = .with { $0.reason = .frameTooLarge; $0.detail = "bye" } })
        frames.append(.with { $0.hello = .with { $0.protocolVersion = 1; $0.revocationList = "{\"list\": \"…\"}" } })
        frames.append(.with { $0.helloAck = .with { $0.device = device; $0.revocationList = "{}" } })
        frames.append(.with {
            $0.joinRequest = .with {
                $0.requestID = 3; $0.inviteSecret = Data([0, 1, 2, 255]); $0.deviceID = "id"; $0.deviceName = "TV"
                $0.publicKey = Data(repeating: 7, count: 91)
            }
        })
        frames.append(.with { $0.joinRequest = Baton_V1_JoinRequest() })
        frames.append(.with {
            $0.joinResponse = .with {
                $0.requestID = 3; $0.status = .success; $0.accountCertificate = Data([1, 2]); $0.deviceCertificate = Data([3])
                $0.revocationList = "{}"
            }
        })
        frames.append(.with {
            $0.joinResponse = .with {
                $0.requestID = 4; $0.status = .success; $0.accountCertificate = Data([1]); $0.deviceCertificate = Data([2])
                $0.brokerURL = "mqtts://[fd00::1]:8883"
                $0.brokerCa = "-----BEGIN CERTIFICATE-----\n" + String(repeating: "QUJD", count: 300) + "\n-----END CERTIFICATE-----\n"
            }
        })
        frames.append(.with { $0.joinResponse = .with { $0.status = .success; $0.brokerURL = "mqtt://hub.home:1883" } })
        frames.append(.with { $0.joinResponse = .with { $0.status = .refused; $0.detail = "the invite code has already been used" } })
        var empty = Baton_V1_Value()
        empty.kind = nil
        var entry = Baton_V1_Dictionary.Entry()
        entry.key = "no value"
        var withEmpty = Baton_V1_Dictionary()
        withEmpty.entries = [entry, .with { $0.key = "empty kind"; $0.value = empty }]
        frames.append(.with { $0.serviceRequest = .with { $0.message = withEmpty } })
        return frames
    }()

    /// Frame bytes without the length prefix, as Baton writes them.
    static func batonBytes(_ frame: Baton_V1_Frame) throws -> [UInt8] {
        var out = ByteBuffer()
        try FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.hardLimit)
        var copy = out
        guard let length = try Varint.read(from: &copy) else { throw WireError.protocolError("no length") }
        #expect(Int(length) == copy.readableBytes)
        return Array(copy.readableBytesView)
    }

    /// The frame Baton reads from `payload` (a Frame without its length prefix).
    static func batonFrame(_ payload: [UInt8]) throws -> Frame {
        var input = ByteBuffer()
        Varint.write(UInt64(payload.count), into: &input)
        input.writeBytes(payload)
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        guard case .frame(let frame) = try decoder.decode(buffer: &input) else {
            throw WireError.protocolError("no frame")
        }
        return frame
    }

    @Test("the codec of the generated types writes the bytes SwiftProtobuf writes, for every kind of frame", arguments: frames.indices)
    func writesSwiftProtobufsBytes(_ index: Int) throws {
        let frame = Self.frames[index]
        let reference: [UInt8] = try frame.serializedBytes()
        #expect(try Self.batonBytes(frame) == reference)
    }

    @Test("Baton's frames are written as SwiftProtobuf writes them, service frames included", arguments: frames.indices)
    func framesWriteSwiftProtobufsBytes(_ index: Int) throws {
        let frame = try Frame(wire: Self.frames[index])
        var out = ByteBuffer()
        guard (try? FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.hardLimit)) != nil else {
            // Only a message that breaks the Value rules cannot be sent.
            guard case .serviceRequest(_, _, let message, _) = frame, case .failure = message.values else {
                Issue.record("\(frame) was not written")
                return
            }
            return
        }
        _ = try Varint.read(from: &out)
        let reference: [UInt8] = try frame.wire.serializedBytes()
        #expect(Array(out.readableBytesView) == reference)
    }

    @Test("Baton reads what SwiftProtobuf writes, for every kind of frame", arguments: frames.indices)
    func readsSwiftProtobufsBytes(_ index: Int) throws {
        let frame = Self.frames[index]
        #expect(try Self.batonFrame(frame.serializedBytes()) == Frame(wire: frame))
    }

    @Test("unknown fields of every wire type are skipped, as proto3 requires")
    func unknownFieldsAreSkipped() throws {
        let frame = Baton_V1_Frame.with { $0.ping = .with { $0.nonce = 5 } }
        var bytes: [UInt8] = try frame.serializedBytes()
        // Field 99 as varint, fixed64, length-delimited and fixed32, before the known one.
        bytes = [0x98, 0x06, 0x01, 0x99, 0x06] + [UInt8](repeating: 0, count: 8)
            + [0x9A, 0x06, 0x02, 0xAA, 0xBB, 0x9D, 0x06, 1, 2, 3, 4] + bytes
        #expect(try Self.batonFrame(bytes) == Frame(wire: frame))
    }

    @Test("a message field seen twice is merged, a oneof member seen twice too, as SwiftProtobuf does")
    func repeatedMessageFieldsMerge() throws {
        let first = Baton_V1_Frame.with { $0.launchRequest = .with { $0.requestID = 1; $0.uri = "a://" } }
        let second = Baton_V1_Frame.with { $0.launchRequest = .with { $0.appID = "x"; $0.preferredAppIds = ["p"] } }
        let bytes: [UInt8] = try first.serializedBytes() + second.serializedBytes()
        let reference = try Baton_V1_Frame(serializedBytes: bytes)
        #expect(reference.launchRequest.uri == "a://" && reference.launchRequest.appID == "x")
        #expect(try Self.batonFrame(bytes) == Frame(wire: reference))
    }

    static let discarding: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = true
        return options
    }()

    @Test("mutated frames: wherever SwiftProtobuf reads a frame Baton reads the same frame, and nothing crashes")
    func mutatedFramesAgreeWithSwiftProtobuf() throws {
        var random = SplitMix64(seed: 0xBA70)
        let seeds: [[UInt8]] = try Self.frames.map { try $0.serializedBytes() }.filter { $0.count < 2_000 }
        var agreed = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...(random.next() % 3) {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.removeSubrange(at...)
                default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
                }
                if bytes.isEmpty { bytes = [0x62, 0] }
            }
            let reference = (try? Baton_V1_Frame(serializedBytes: bytes, options: Self.discarding)).flatMap { try? Frame(wire: $0) }
            let ours = try? Self.batonFrame(bytes)
            if let reference {
                #expect(ours.map(Self.comparable) == Self.comparable(reference), "input \(bytes)")
                agreed += 1
            }
        }
        #expect(agreed > 1_000)
    }
}

extension FrameCodecConformanceTests {
    /// A frame in a form that compares equal to itself: its bytes, so a NaN made by a mutation
    /// is equal to itself; a frame that cannot be written (a message that breaks the rules) as
    /// its description.
    static func comparable(_ frame: Frame) -> String {
        var out = ByteBuffer()
        guard (try? FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.hardLimit)) != nil else { return "\(frame)" }
        return "\(Array(out.readableBytesView))"
    }
}

/// A small seeded generator, so a failing mutation can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
