import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The broker tests' ground: devices on networks of their own with only a hub between them,
/// real mosquittos there (alone, bridged, over TLS), and captures that read exactly what
/// crosses a broker.
@Suite("Broker network")
struct BrokerNetworkTests {
    /// Listens on 0.0.0.0:argv[1] and says so; accepts and drops connections.
    static let listener = """
        import socket, sys
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(('0.0.0.0', int(sys.argv[1])))
        s.listen()
        print('listening', flush=True)
        while True:
            s.accept()[0].close()
        """

    @Test("a device reaches every address of the hub, and no other device: the hub forwards nothing")
    func reach() async throws {
        try await BrokerNetwork.with(devices: 3) { net in
            let hubListener = try net.python(in: net.hub, Self.listener, ["7000"])
            let bListener = try net.python(in: net.b, Self.listener, ["7001"])
            try await hubListener.waitForLine("listening") { $0 == "listening" }
            try await bListener.waitForLine("listening") { $0 == "listening" }
            for device in [net.a, net.c] {
                for hubAddress in [BrokerNetwork.brokerHost, net.gateway(of: net.a), net.gateway(of: net.b), net.gateway(of: net.c)] {
                    #expect(try await net.canConnect(from: device, to: hubAddress, port: 7000), "\(device) does not reach the hub at \(hubAddress)")
                }
            }
            // b's listener is there (the hub, on b's link, reaches it) but no other device reaches it.
            #expect(try await net.canConnect(from: net.hub, to: net.address(of: net.b), port: 7001))
            #expect(try await !net.canConnect(from: net.a, to: net.address(of: net.b), port: 7001, within: 3))
            #expect(try await !net.canConnect(from: net.c, to: net.address(of: net.b), port: 7001, within: 3))
        }
    }

    /// Joins group argv[1] on port argv[2] on the interface holding argv[3]; prints what comes.
    static let multicastReceiver = """
        import socket, sys
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(('', int(sys.argv[2])))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(sys.argv[1]) + socket.inet_aton(sys.argv[3]))
        print('ready', flush=True)
        while True:
            data, source = s.recvfrom(2048)
            print(data.decode(errors='replace'), source[0], flush=True)
        """

    /// Sends argv[4] five times to group argv[1] port argv[2] out of the interface holding argv[3], TTL 32.
    static let multicastSender = """
        import socket, sys, time
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 32)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(sys.argv[3]))
        for _ in range(5):
            s.sendto(sys.argv[4].encode(), (sys.argv[1], int(sys.argv[2])))
            time.sleep(0.05)
        """

    @Test("multicast sent in one device's network reaches the hub's end of its link and never another device", arguments: [
        ("224.0.0.251", "5353"), ("239.255.78.1", "5354"),
    ])
    func multicastStaysHome(group: String, port: String) async throws {
        try await BrokerNetwork.with { net in
            let atHub = try net.python(in: net.hub, Self.multicastReceiver, [group, port, net.gateway(of: net.a)])
            let inB = try net.python(in: net.b, Self.multicastReceiver, [group, port, net.address(of: net.b)])
            try await atHub.waitForLine("ready") { $0 == "ready" }
            try await inB.waitForLine("ready") { $0 == "ready" }
            _ = try net.python(in: net.a, Self.multicastSender, [group, port, net.address(of: net.a), "from-a"])
            try await atHub.waitForLine("a's packet") { $0.hasPrefix("from-a ") }
            // b's receiver works: the hub's packet on b's link comes after a's, a's never.
            _ = try net.python(in: net.hub, Self.multicastSender, [group, port, net.gateway(of: net.b), "from-hub"])
            try await inB.waitForLine("the hub's packet") { $0.hasPrefix("from-hub ") }
            #expect(!inB.output.contains("from-a"), "\(inB.output)")
        }
    }

    @Test("mDNS in one device's network finds the agent there and not the other device's")
    func mdnsStaysHome() async throws {
        try await BrokerNetwork.with { net in
            let inA = try await net.agent(in: net.a, name: "Kitchen \(NamespaceSpawner.tag())")
            let inB = try await net.agent(in: net.b, name: "Office \(NamespaceSpawner.tag())")
            let watchA = try net.watcher(in: net.a), watchB = try net.watcher(in: net.b)
            try await watchA.waitFor("a's agent") { $0.event == "added" && $0.id == inA.id }
            try await watchB.waitFor("b's agent") { $0.event == "added" && $0.id == inB.id }
            #expect(!watchA.events().contains { $0.id == inB.id }, "\(watchA.transcript)")
            #expect(!watchB.events().contains { $0.id == inA.id }, "\(watchB.transcript)")
            let listed = try await net.baton(in: net.b, ["devices", "--json"])
            #expect(listed.code == 0, "\(listed)")
            #expect(!listed.stdout.contains(inA.id), "\(listed)")
        }
    }

    @Test("a plain mosquitto in the hub serves every device; it stops on SIGTERM and SIGKILL and restarts on its port")
    func mosquittoLifecycle() async throws {
        try await BrokerNetwork.with { net in
            let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
            #expect(broker.url == "mqtt://10.78.0.1:\(broker.port)")
            let sub = try await net.subscribe(in: net.b, to: broker, topic: "baton/#")
            let published = try await net.publish(in: net.a, to: broker, topic: "baton/one", message: "hello from a")
            #expect(published.code == 0, "\(published)")
            try await sub.waitFor("a's message") { $0 == BrokerMessage(topic: "baton/one", payload: Array("hello from a".utf8), retained: false) }

            let port = broker.port, firstPid = broker.pid
            #expect(await broker.stop() == 0, "\(broker.log)")
            #expect(!broker.isRunning)
            #expect(try await !net.canConnect(from: net.a, to: broker.host, port: port, within: 1))
            let refused = try await net.publish(in: net.a, to: broker, topic: "baton/two", message: "nobody")
            #expect(refused.code != 0, "\(refused)")

            try await broker.restart()
            #expect(broker.port == port && broker.pid != firstPid && broker.isRunning)
            #expect(broker.log.contains("Opening ipv4 listen socket on port \(port)."), "\(broker.log)")
            let again = try await net.subscribe(in: net.b, to: broker, topic: "baton/#")
            #expect(try await net.publish(in: net.a, to: broker, topic: "baton/three", message: "back").code == 0)
            try await again.waitFor("the message after the restart") { $0.topic == "baton/three" }

            #expect(await broker.stop(signal: SIGKILL) == 128 + SIGKILL)
            try await broker.restart()
            let third = try await net.subscribe(in: net.b, to: broker, topic: "baton/#")
            #expect(try await net.publish(in: net.a, to: broker, topic: "baton/four", message: "again").code == 0)
            try await third.waitFor("the message after the second restart") { $0.topic == "baton/four" }
        }
    }

    @Test("a mosquitto that cannot start fails with its own words")
    func mosquittoStartFailure() async throws {
        try await BrokerNetwork.with(devices: 1) { net in
            do {
                _ = try await net.startMosquitto(config: BrokerNetwork.plainConfig + "no_such_option_here true\n")
                Issue.record("a configuration mosquitto refuses started")
            } catch {
                #expect("\(error)".contains("no_such_option_here"), "\(error)")
            }
        }
    }

    @Test("two bridged mosquittos carry MQTT 5 messages both ways, retained ones as retained")
    func bridgedPair() async throws {
        try await BrokerNetwork.with { net in
            let (home, cloud) = try await net.startBridgedPair()
            #expect(home.port != cloud.port)
            let inB = try await net.subscribe(in: net.b, to: cloud, topic: "baton/#")
            let inA = try await net.subscribe(in: net.a, to: home, topic: "baton/#")

            #expect(try await net.publish(in: net.a, to: home, topic: "baton/x/up", message: "a to b").code == 0)
            try await inB.waitFor("a's message on cloud") { $0 == BrokerMessage(topic: "baton/x/up", payload: Array("a to b".utf8), retained: false) }
            #expect(try await net.publish(in: net.b, to: cloud, topic: "baton/x/down", message: "b to a").code == 0)
            try await inA.waitFor("b's message on home") { $0 == BrokerMessage(topic: "baton/x/down", payload: Array("b to a".utf8), retained: false) }

            // Retained on one side, held as retained on the other: a late subscriber there gets it.
            #expect(try await net.publish(in: net.a, to: home, topic: "baton/r/home", message: "kept at home", retain: true).code == 0)
            #expect(try await net.publish(in: net.b, to: cloud, topic: "baton/r/cloud", message: "kept in the cloud", retain: true).code == 0)
            try await inB.waitFor("home's retained message live on cloud") { $0.topic == "baton/r/home" }
            try await inA.waitFor("cloud's retained message live on home") { $0.topic == "baton/r/cloud" }
            let lateB = try await net.subscribe(in: net.b, to: cloud, topic: "baton/r/#")
            let lateA = try await net.subscribe(in: net.a, to: home, topic: "baton/r/#")
            try await lateB.waitFor("home's retained message") { $0 == BrokerMessage(topic: "baton/r/home", payload: Array("kept at home".utf8), retained: true) }
            try await lateA.waitFor("cloud's retained message") { $0 == BrokerMessage(topic: "baton/r/cloud", payload: Array("kept in the cloud".utf8), retained: true) }
            // Only baton/# crosses.
            let other = try await net.subscribe(in: net.b, to: cloud, topic: "other/#")
            #expect(try await net.publish(in: net.a, to: home, topic: "other/x", message: "stays home").code == 0)
            #expect(try await net.publish(in: net.a, to: home, topic: "baton/x/after", message: "crosses").code == 0)
            try await inB.waitFor("the later baton message") { $0.topic == "baton/x/after" }
            #expect(other.captured().isEmpty, "\(other.captured())")
        }
    }

    @Test("a capture of every topic records binary payloads byte for byte, empty ones and odd topics included")
    func captureIsExact() async throws {
        try await BrokerNetwork.with(devices: 1) { net in
            let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
            let capture = try await net.subscribeAll(on: broker)
            let binary: [UInt8] = [0, 0, 0x0a, 0x20, 0x4d, 0x20, 0x31, 0x0d, 0] + (0...255).map { UInt8($0) } + [0]
            let sent: [BrokerMessage] = [
                BrokerMessage(topic: "baton/bin", payload: binary, retained: false),
                BrokerMessage(topic: "baton/empty", payload: [], retained: false),
                BrokerMessage(topic: "baton/with space/and M 1 00", payload: Array("plain text: media:secret-uri".utf8), retained: false),
            ]
            for message in sent {
                let result = try await net.publish(in: net.a, to: broker, topic: message.topic, payload: message.payload)
                #expect(result.code == 0, "\(result)")
            }
            try await capture.waitFor("the last message") { $0.topic == sent.last!.topic }
            #expect(capture.captured() == sent, "\(capture.transcript)")
            #expect(capture.payloadsContain("media:secret-uri"))
            #expect(capture.payloadsContain(bytes: [0xfe, 0xff, 0x00]))
            #expect(!capture.payloadsContain("media:other-uri"))
            #expect(capture.topicsContain("with space"))
        }
    }

    @Test("a TLS mosquitto that requires client certificates serves clients with one, refuses those without, and captures through TLS")
    func tlsBroker() async throws {
        try await BrokerNetwork.with(devices: 1) { net in
            let certificates = try BrokerCertificates(in: net.directory.path)
            let broker = try await net.startMosquitto(config: certificates.listenerConfig, clientTLS: certificates.clientTLS)
            #expect(broker.url == "mqtts://10.78.0.1:\(broker.port)")
            let capture = try await net.subscribeAll(on: broker)
            let sender = try certificates.client("sender", in: net.directory.path)

            let refused = try await net.publish(
                in: net.a, to: broker, topic: "baton/no-cert", message: "without a certificate", tls: MQTTClientTLS(cafile: certificates.ca))
            #expect(refused.code != 0, "\(refused)")
            let accepted = try await net.publish(in: net.a, to: broker, topic: "baton/cert", message: "with a certificate", tls: sender)
            #expect(accepted.code == 0, "\(accepted)")
            try await capture.waitFor("the message of the client with a certificate") { $0.topic == "baton/cert" }
            #expect(!capture.captured().contains { $0.topic == "baton/no-cert" }, "\(capture.transcript)")
            #expect(broker.log.contains("u'sender'"), "the broker did not take the certificate's name as the user name:\n\(broker.log)")
        }
    }
}
