import BatonMQTT
import NIOCore
import Testing

/// A broker that sends garbage, oversized packets, refusals or silence: the client closes
/// the connection with a reason in its log, never crashes, and tries again (slowly after a
/// lasting refusal).
@Suite("MQTT client with a hostile broker", .timeLimit(.minutes(1)))
struct MQTTClientHostileBrokerTests {
    static let connack: [UInt8] = [0x20, 0x03, 0x00, 0x00, 0x00]

    func client(port: Int, logs: LogCapture, cap: TimeAmount = .milliseconds(300),
                configure: (inout MQTTClient.Configuration) -> Void = { _ in }) -> MQTTClient {
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: "victim")
        configuration.reconnectBackoffBase = .milliseconds(20)
        configuration.reconnectBackoffCap = cap
        configure(&configuration)
        let client = MQTTClient(configuration: configuration, eventLoop: testGroup.next(), logger: logs.logger())
        client.start()
        return client
    }

    @Test("garbage instead of CONNACK closes the connection with a reason, and the client reconnects")
    func garbage() async throws {
        let broker = try await FakeBroker(answer: [0x00, 0x01, 0xFF, 0xFE])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs)
        try await waitUntil("a second connection") { broker.connections >= 2 }
        #expect(logs.contains("bad packet from the broker: packet type 0 does not exist"))
        try await client.stop().get()
        try await broker.close()
    }

    @Test("a remaining length over the maximum packet size is refused before its bytes arrive")
    func oversizedRemainingLength() async throws {
        // CONNACK, then a PUBLISH announcing 268,435,455 bytes.
        let broker = try await FakeBroker(answer: Self.connack + [0x30, 0xFF, 0xFF, 0xFF, 0x7F, 0x00])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs)
        try await waitUntil("a second connection") { broker.connections >= 2 }
        #expect(logs.contains("connection lost: bad packet from the broker: packet of 268435460 bytes is over the maximum of 1114112"))
        try await client.stop().get()
        try await broker.close()
    }

    @Test("an unknown property identifier is a protocol error that closes the connection")
    func unknownProperty() async throws {
        // CONNACK whose properties hold identifier 0x7F.
        let broker = try await FakeBroker(answer: [0x20, 0x05, 0x00, 0x00, 0x02, 0x7F, 0x00])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs)
        try await waitUntil("a second connection") { broker.connections >= 2 }
        #expect(logs.contains("unknown property identifier 127"))
        try await client.stop().get()
        try await broker.close()
    }

    @Test("a property in a packet where MQTT 5 gives it no place is a protocol error that closes the connection")
    func misplacedProperty() async throws {
        // CONNACK carrying Will Delay Interval (0x18), which belongs in a will only.
        let broker = try await FakeBroker(answer: [0x20, 0x08, 0x00, 0x00, 0x05, 0x18, 0x00, 0x00, 0x00, 0x05])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs)
        try await waitUntil("a second connection") { broker.connections >= 2 }
        #expect(logs.contains("property identifier 24 has no place in CONNACK"))
        try await client.stop().get()
        try await broker.close()
    }

    @Test("CONNACK 0x86 is said as bad credentials and retried only after the backoff cap")
    func refusedCredentials() async throws {
        let broker = try await FakeBroker(answer: [0x20, 0x03, 0x00, 0x86, 0x00])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs, cap: .seconds(30))
        try await waitUntil("the refusal in the log") { logs.contains("0x86 (bad user name or password)") }
        #expect(logs.all.contains { $0.hasPrefix("error") && $0.contains("the broker refused the connection: 0x86") })
        // A fast loop would have dialled again many times by now.
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(broker.connections == 1)
        try await client.stop().get()
        try await broker.close()
    }

    @Test("a broker that stops answering PINGREQ is noticed by the ping deadline")
    func deadBrokerNoticed() async throws {
        let broker = try await FakeBroker(answer: Self.connack)
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs) {
            $0.keepAlive = 1
            $0.pingTimeout = .milliseconds(500)
        }
        try await waitUntil("the ping deadline") { logs.contains("no PINGRESP within 500 ms") }
        try await client.stop().get()
        try await broker.close()
    }

    @Test("a broker that accepts but never answers CONNACK is left at the connect deadline")
    func silentBroker() async throws {
        let broker = try await FakeBroker(answer: [])
        let logs = LogCapture()
        let client = client(port: broker.port, logs: logs) { $0.connectTimeout = .milliseconds(300) }
        try await waitUntil("the connect deadline") { logs.contains("no CONNACK within 300 ms") }
        try await waitUntil("a second connection") { broker.connections >= 2 }
        try await client.stop().get()
        try await broker.close()
    }

    // MARK: a broker lost before its PUBACK

    /// The PUBLISH packets among `packets`.
    static func publishes(_ packets: [MQTTPacket]) -> [MQTTPacket.Publish] {
        packets.compactMap { if case .publish(let publish) = $0 { publish } else { nil } }
    }

    /// Publishes two QoS 1 messages to a broker that drops the first connection at the first
    /// PUBLISH and acknowledges nothing; returns what the first and second connections got.
    func resent(sessionPresent: Bool) async throws -> (first: [MQTTPacket.Publish], second: [MQTTPacket.Publish]) {
        let broker = try await RecordingBroker(sessionPresent: sessionPresent)
        let client = client(port: broker.port, logs: LogCapture())
        try await waitUntil("the first connection") { broker.connections.count >= 1 }
        for text in ["one", "two"] {
            _ = client.publish(MQTTMessage(topic: "t/\(text)", payload: ByteBuffer(string: text)))
        }
        try await waitUntil("both publishes on the second connection") {
            broker.connections.count >= 2 && Self.publishes(broker.connections[1]).count >= 2
        }
        let connections = broker.connections
        try await client.stop().get()
        try await broker.close()
        return (Self.publishes(connections[0]), Self.publishes(connections[1]))
    }

    @Test("a publish the broker did not acknowledge goes again, in order, with DUP and its original packet id, to a broker that kept the session")
    func resentUnderItsIDToAKeptSession() async throws {
        let (first, second) = try await resent(sessionPresent: true)
        let sent = try #require(first.first)
        #expect(sent.message.topic == "t/one" && !sent.dup)
        #expect(second.map(\.message.topic) == ["t/one", "t/two"])
        #expect(second[0].dup && second[0].packetID == sent.packetID, "\(second[0])")
        // The second may or may not have left before the connection dropped: DUP or not, it
        // keeps an id of its own.
        #expect(second[1].packetID != sent.packetID, "\(second[1])")
    }

    @Test("to a broker that starts a new session, the publish goes again as a new one: no DUP, a fresh packet id")
    func resentAsNewToANewSession() async throws {
        let (first, second) = try await resent(sessionPresent: false)
        #expect(first.first?.message.topic == "t/one")
        #expect(second.map(\.message.topic) == ["t/one", "t/two"])
        #expect(second.allSatisfy { !$0.dup }, "\(second)")
        #expect(Set(second.compactMap(\.packetID)).count == 2, "\(second)")
    }
}
