import BatonMQTT
import Foundation
import NIOCore
import Testing

/// The client against a real mosquitto 2.0.11 that each test starts for itself.
@Suite("MQTT client with mosquitto", .timeLimit(.minutes(2)))
struct MQTTClientBrokerTests {
    static let properties = MQTTPublishProperties(
        messageExpiryInterval: 60, responseTopic: "baton/reply/1", correlationData: Array("req-42".utf8),
        contentType: "application/x-baton", userProperties: [
            MQTTUserProperty(name: "kind", value: "request"), MQTTUserProperty(name: "kind", value: "second"),
        ])

    @Test("QoS 0 and QoS 1 messages come back to a subscriber with every property")
    func publishReceiveWithProperties() async throws {
        let broker = try MosquittoProcess()
        let delegate = RecordingDelegate()
        let client = try await connectedClient("props", port: broker.port, delegate: delegate)
        let codes = try await client.subscribe([MQTTSubscription(filter: "t/#", qos: .atLeastOnce)]).get()
        #expect(codes == [1])

        for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
            let topic = "t/\(qos.rawValue)"
            let sent = MQTTMessage(topic: topic, payload: ByteBuffer(string: "hello \(qos)"), qos: qos, properties: Self.properties)
            let ack = try await client.publish(sent).get()
            #expect(ack.reasonCode == 0)
            try await waitUntil("the message on \(topic)") { !delegate.messages(on: topic).isEmpty }
            let got = try #require(delegate.messages(on: topic).first)
            #expect(got.payload.text == "hello \(qos)")
            #expect(got.qos == qos)
            // The broker hands on the expiry left, which a second boundary may have cut.
            var properties = got.properties
            #expect((58...60).contains(properties.messageExpiryInterval ?? 0))
            properties.messageExpiryInterval = Self.properties.messageExpiryInterval
            #expect(properties == Self.properties)
        }
        try await client.stop().get()
    }

    @Test("mosquitto_sub reads the properties our client sent (not only our codec agreeing with itself)")
    func propertiesReadByMosquittoSub() async throws {
        let broker = try MosquittoProcess()
        let sub = Process()
        sub.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        sub.arguments = ["-V", "mqttv5", "-p", "\(broker.port)", "-i", "reader", "-t", "t/x", "-F", "%j", "-C", "1", "-W", "15"]
        let out = Pipe()
        sub.standardOutput = out
        try sub.run()
        try await waitUntil("mosquitto_sub's subscription") { broker.log.contains("Sending SUBACK to reader") }

        let delegate = RecordingDelegate()
        let client = try await connectedClient("writer", port: broker.port, delegate: delegate)
        let ack = try await client.publish(MQTTMessage(topic: "t/x", payload: ByteBuffer(string: "payload"),
                                                       properties: Self.properties)).get()
        #expect(ack.reasonCode == 0)
        try await waitUntil("mosquitto_sub to exit") { !sub.isRunning }
        let line = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        let properties = try #require(json["properties"] as? [String: Any], "\(line)")
        #expect(json["payload"] as? String == "payload")
        #expect(properties["content-type"] as? String == "application/x-baton")
        #expect(properties["response-topic"] as? String == "baton/reply/1")
        #expect(properties["correlation-data"] as? String == "req-42")
        #expect((58...60).contains(properties["message-expiry-interval"] as? Int ?? 0))
        // mosquitto_sub prints user properties as one object, so the last of a repeated name.
        #expect((properties["user-properties"] as? [String: String])?["kind"] != nil)
        try await client.stop().get()
    }

    @Test("a QoS 1 publish nobody subscribes to is answered with PUBACK 0x10 (no matching subscribers)")
    func pubackNoMatchingSubscribers() async throws {
        let broker = try MosquittoProcess()
        let client = try await connectedClient("lonely", port: broker.port, delegate: RecordingDelegate())
        let ack = try await client.publish(MQTTMessage(topic: "nobody/here", payload: ByteBuffer(string: "x"))).get()
        #expect(ack.reasonCode == 0x10)
        #expect(ack.noMatchingSubscribers)
        try await client.stop().get()
    }

    @Test("a retained message reaches a client that subscribes later")
    func retainedToLaterSubscriber() async throws {
        let broker = try MosquittoProcess()
        let writer = try await connectedClient("writer", port: broker.port, delegate: RecordingDelegate())
        _ = try await writer.publish(MQTTMessage(topic: "presence/a", payload: ByteBuffer(string: "here"), retain: true,
                                                 properties: MQTTPublishProperties(messageExpiryInterval: 30))).get()
        try await writer.stop().get()

        let delegate = RecordingDelegate()
        let reader = try await connectedClient("reader", port: broker.port, delegate: delegate)
        _ = try await reader.subscribe([MQTTSubscription(filter: "presence/+")]).get()
        try await waitUntil("the retained presence") { !delegate.messages(on: "presence/a").isEmpty }
        let got = try #require(delegate.messages(on: "presence/a").first)
        #expect(got.retain)
        #expect(got.payload.text == "here")
        try await reader.stop().get()
    }

    @Test("a delayed will is published after the client's connection dies, never after a clean stop")
    func willOnlyOnAbruptLoss() async throws {
        let broker = try MosquittoProcess()
        let watcher = RecordingDelegate()
        let watch = try await connectedClient("watcher", port: broker.port, delegate: watcher)
        _ = try await watch.subscribe([MQTTSubscription(filter: "will/#")]).get()

        // The session outlives the connection: mosquitto cuts a will's delay to the session's expiry.
        func withWill(_ name: String) -> (inout MQTTClient.Configuration) -> Void {
            { configuration in
                configuration.will = MQTTWill(message: MQTTMessage(topic: "will/\(name)", payload: ByteBuffer(string: "gone \(name)")),
                                              delayInterval: 2)
                configuration.sessionExpiryInterval = 10
            }
        }
        let polite = try await connectedClient("polite", port: broker.port, delegate: RecordingDelegate(), configure: withWill("polite"))
        try await polite.stop().get()
        let crashing = try await connectedClient("crashing", port: broker.port, delegate: RecordingDelegate(), configure: withWill("crashing"))
        try await crashing.abandonConnectionForTesting().get()

        // Not at once: the delay was sent and kept.
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(watcher.messages(on: "will/crashing").isEmpty)
        try await waitUntil("the crashed client's will") { !watcher.messages(on: "will/crashing").isEmpty }
        #expect(watcher.messages(on: "will/crashing").first?.payload.text == "gone crashing")
        // The polite client's will (same delay, stopped earlier) would be out by now.
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(watcher.messages(on: "will/polite").isEmpty)
        try await watch.stop().get()
    }

    @Test("after the broker is killed and restarted the client reconnects, re-subscribes, and a QoS 1 publish made while down arrives")
    func brokerRestart() async throws {
        let broker = try MosquittoProcess()
        let delegate = RecordingDelegate()
        let client = try await connectedClient("survivor", port: broker.port, delegate: delegate)
        _ = try await client.subscribe([MQTTSubscription(filter: "t/#")]).get()

        broker.kill()
        try await waitUntil("the client to see the loss") { !delegate.disconnects.isEmpty }
        let pending = client.publish(MQTTMessage(topic: "t/while-down", payload: ByteBuffer(string: "queued")))
        try broker.start()

        let ack = try await pending.get()
        #expect(ack.reasonCode == 0)  // 0, not 0x10: the re-subscription was in place first
        try await waitUntil("the queued message back through the new subscription") {
            !delegate.messages(on: "t/while-down").isEmpty
        }
        #expect(delegate.connects.count >= 2)
        try await client.stop().get()
    }

    @Test("two clients with one client id: the takeover loop is said once in the log")
    func takeoverLoopLogged() async throws {
        let broker = try MosquittoProcess()
        let logs = LogCapture()
        let first = try await connectedClient("device-1", port: broker.port, delegate: RecordingDelegate(), logs: logs) {
            $0.reconnectBackoffCap = .seconds(5)
        }
        let second = try await connectedClient("device-1", port: broker.port, delegate: RecordingDelegate(), logs: logs) {
            $0.reconnectBackoffCap = .seconds(5)
        }
        let line = "another process uses client id device-1 (two agents for one device?)"
        do {
            try await waitUntil("the takeover loop line", within: 20) { logs.contains(line) }
        } catch {
            Issue.record("\(error); the clients logged:\n\(logs.all.suffix(30).joined(separator: "\n"))")
        }
        #expect(logs.all.contains { $0.hasPrefix("error") && $0.contains(line) })
        try await first.stop().get()
        try await second.stop().get()
    }

    @Test("stop fails QoS 1 publishes still waiting for a broker with a stopped error")
    func stopFailsQueued() async throws {
        let port = try freePort()  // nothing listens there
        var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: "nobroker")
        configuration.reconnectBackoffCap = .milliseconds(200)
        let client = MQTTClient(configuration: configuration, eventLoop: testGroup.next(), logger: LogCapture().logger())
        client.start()
        let pending = client.publish(MQTTMessage(topic: "t", payload: ByteBuffer(string: "x")))
        try await client.stop().get()
        await #expect(throws: MQTTError(.stopped, "the MQTT client stopped")) { try await pending.get() }
        await #expect(throws: MQTTError.self) { try await client.publish(MQTTMessage(topic: "t", payload: ByteBuffer())).get() }
    }
}
