@testable import BatonMQTT
import NIOCore
import Testing

/// The state-free decoder: every packet type the client writes or reads round-trips, and
/// bytes that are not MQTT 5 throw (never trap), bounds first.
@Suite("MQTT 5 packet codec")
struct MQTTPacketCodecTests {
    static let max = 1_114_112

    func roundTrip(_ packet: MQTTPacket) throws -> MQTTPacket? {
        var buffer = packet.encoded()
        let decoded = try MQTTPacket.decode(from: &buffer, maximumPacketSize: Self.max)
        #expect(buffer.readableBytes == 0)
        return decoded
    }

    func decode(_ bytes: [UInt8], max: Int = Self.max) throws -> MQTTPacket? {
        var buffer = ByteBuffer(bytes: bytes)
        return try MQTTPacket.decode(from: &buffer, maximumPacketSize: max)
    }

    static let properties = MQTTPublishProperties(
        messageExpiryInterval: 9, responseTopic: "r", correlationData: [0, 1, 255], contentType: "c",
        userProperties: [MQTTUserProperty(name: "a", value: "b"), MQTTUserProperty(name: "a", value: "c")])

    @Test("every packet type survives encode then decode", arguments: [
        MQTTPacket.connect(.init(clientID: "id", keepAlive: 30, cleanStart: true, username: "u", password: [1, 2],
                                 will: MQTTWill(message: MQTTMessage(topic: "w", payload: ByteBuffer(string: "bye"), retain: true,
                                                                     properties: properties), delayInterval: 5),
                                 properties: MQTTProperties([.init(id: 0x27, value: .fourByte(1000)), .init(id: 0x22, value: .twoByte(0))]))),
        .connack(.init(sessionPresent: true, reasonCode: 0, properties: MQTTProperties([.init(id: 0x21, value: .twoByte(20))]))),
        .publish(.init(message: MQTTMessage(topic: "a/b", payload: ByteBuffer(string: "hi"), qos: .atLeastOnce, properties: properties),
                       packetID: 7, dup: true)),
        .publish(.init(message: MQTTMessage(topic: "a", payload: ByteBuffer(), qos: .atMostOnce), packetID: nil)),
        .puback(.init(packetID: 3)),
        .puback(.init(packetID: 3, reasonCode: 0x10)),
        .puback(.init(packetID: 3, reasonCode: 0x87, properties: MQTTProperties([.init(id: 0x1F, value: .string("no"))]))),
        .subscribe(.init(packetID: 4, subscriptions: [MQTTSubscription(filter: "a/#", qos: .atLeastOnce, noLocal: true),
                                                      MQTTSubscription(filter: "b/+", qos: .atMostOnce)])),
        .suback(.init(packetID: 4, reasonCodes: [1, 0x87])),
        .unsubscribe(.init(packetID: 5, filters: ["a/#", "b"])),
        .unsuback(.init(packetID: 5, reasonCodes: [0, 0x11])),
        .pingreq, .pingresp,
        .disconnect(.init()),
        .disconnect(.init(reasonCode: 0x8E, properties: MQTTProperties([.init(id: 0x1F, value: .string("taken"))]))),
    ])
    func roundTrips(_ packet: MQTTPacket) throws {
        #expect(try roundTrip(packet) == packet)
    }

    @Test("a packet is decoded only once all its bytes are there, byte by byte")
    func partial() throws {
        let packet = MQTTPacket.publish(.init(message: MQTTMessage(topic: "t", payload: ByteBuffer(repeating: 7, count: 300)), packetID: 1))
        let bytes = Array(packet.encoded().readableBytesView)
        var buffer = ByteBuffer()
        for (index, byte) in bytes.enumerated() {
            buffer.writeInteger(byte)
            let decoded = try MQTTPacket.decode(from: &buffer, maximumPacketSize: Self.max)
            #expect((decoded == nil) == (index < bytes.count - 1))
            if let decoded { #expect(decoded == packet) }
        }
    }

    @Test("a remaining length over the maximum throws before the bytes arrive; at the maximum it waits")
    func bounds() throws {
        #expect(throws: MQTTError.self) { try decode([0x30, 0xFF, 0xFF, 0xFF, 0x7F]) }
        #expect(throws: MQTTError.self) { try decode([0x30, 0x0A], max: 11) }
        #expect(try decode([0x30, 0x09], max: 11) == nil)
        // Five bytes of remaining length.
        #expect(throws: MQTTError.self) { try decode([0x30, 0x80, 0x80, 0x80, 0x80, 0x01]) }
    }

    @Test("malformed packets throw", arguments: [
        ([0x00, 0x00] as [UInt8], "packet type 0 does not exist"),
        ([0x21, 0x03, 0x00, 0x00, 0x00], "packet type 2 with flags 1"),
        ([0x20, 0x03, 0x02, 0x00, 0x00], "CONNACK flags 2"),
        ([0x20, 0x03, 0x00, 0x00, 0x05], "property length 5 runs past the packet"),
        ([0x20, 0x05, 0x00, 0x00, 0x02, 0x7F, 0x00], "unknown property identifier 127"),
        ([0x20, 0x04, 0x00, 0x00, 0x00, 0x00], "1 bytes left over after packet type 2"),
        ([0x36, 0x05, 0x00, 0x01, 0x74, 0x00, 0x00], "PUBLISH with QoS 3"),
        ([0x30, 0x04, 0x00, 0x02, 0xC3, 0x28], "string is not valid UTF-8 (or holds U+0000)"),
        ([0x30, 0x04, 0x00, 0x02, 0x61, 0x00], "string is not valid UTF-8 (or holds U+0000)"),
        ([0x30, 0x03, 0x00, 0x00, 0x00], "PUBLISH topic \"\" is empty or holds a wildcard"),
        ([0x30, 0x05, 0x00, 0x01, 0x74, 0x03, 0x23, 0x00, 0x01], "property length 3 runs past the packet"),
        ([0x30, 0x07, 0x00, 0x01, 0x74, 0x03, 0x23, 0x00, 0x01], "PUBLISH with a topic alias, though Topic Alias Maximum is 0"),
        ([0x32, 0x05, 0x00, 0x01, 0x74, 0x00, 0x00], "PUBLISH with packet id 0"),
        ([0x50, 0x02, 0x00, 0x01], "packet type 5 (QoS 2 or AUTH), which this client never asks for"),
        ([0xD0, 0x01, 0x00], "PINGREQ/PINGRESP with a body"),
        ([0x40, 0x01, 0x00], "packet ends inside a 2-byte integer"),
        // A property where MQTT 5 gives it no place: Will Delay Interval in a PUBLISH, Server
        // Keep Alive in a PUBACK, Message Expiry in a SUBACK.
        ([0x30, 0x09, 0x00, 0x01, 0x74, 0x05, 0x18, 0x00, 0x00, 0x00, 0x05], "property identifier 24 has no place in PUBLISH"),
        ([0x40, 0x07, 0x00, 0x01, 0x00, 0x03, 0x13, 0x00, 0x3C], "property identifier 19 has no place in PUBACK"),
        ([0x90, 0x09, 0x00, 0x01, 0x05, 0x02, 0x00, 0x00, 0x00, 0x3C, 0x00], "property identifier 2 has no place in SUBACK"),
        // One that may stand once, twice: Receive Maximum in a CONNACK.
        ([0x20, 0x09, 0x00, 0x00, 0x06, 0x21, 0x00, 0x0A, 0x21, 0x00, 0x14], "property identifier 33 more than once in CONNACK"),
    ])
    func malformed(_ bytes: [UInt8], _ reason: String) {
        do {
            let packet = try decode(bytes)
            Issue.record("decoded \(String(describing: packet)) from \(bytes)")
        } catch {
            #expect("\(error)".contains(reason))
        }
    }

    @Test("random bytes never trap the decoder")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...40, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Mostly plausible lengths, so the body parsers are reached.
            if bytes.count > 1 { bytes[1] = UInt8(bytes.count - 2) }
            var buffer = ByteBuffer(bytes: bytes)
            _ = try? MQTTPacket.decode(from: &buffer, maximumPacketSize: Self.max)
        }
    }

    @Test("a received payload is a slice of the read buffer, not a copy")
    func payloadIsASlice() throws {
        let packet = MQTTPacket.publish(.init(message: MQTTMessage(topic: "t", payload: ByteBuffer(repeating: 1, count: 4096)), packetID: 2))
        var buffer = packet.encoded()
        guard case .publish(let publish)? = try MQTTPacket.decode(from: &buffer, maximumPacketSize: Self.max) else {
            Issue.record("not a publish")
            return
        }
        let inside = buffer.withVeryUnsafeBytes { storage in
            publish.message.payload.withUnsafeReadableBytes { part in
                part.baseAddress! >= storage.baseAddress! && part.baseAddress! + part.count <= storage.baseAddress! + storage.count
            }
        }
        #expect(inside)
    }
}
