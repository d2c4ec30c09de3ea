import BatonAgent
import BatonClient
import BatonCore
import BatonLua
import BatonNet
import BatonSecurity
import BatonWire
import Foundation
import NIOCore
import NIOPosix
import Testing

/// A dialer for `.broker` routes that reaches no broker: it records every route it is given,
/// then fails, or carries the session over TCP to `relay` (a stand-in for the broker link).
final class FakeBrokerDialer: LinkDialer, @unchecked Sendable {
    let relay: DeviceAddress?
    private let lock = NSLock()
    private var routes: [DeviceRoute] = []

    init(relay: DeviceAddress? = nil) { self.relay = relay }

    /// The routes it was asked to dial, in order.
    var dialled: [DeviceRoute] { lock.withLock { routes } }

    func canDial(_ route: DeviceRoute) -> Bool {
        if case .broker = route { true } else { false }
    }

    func dial(
        _ route: DeviceRoute, on eventLoop: any EventLoop, expecting: PeerExpectation, hello: Hello, settings: DialSettings
    ) -> EventLoopFuture<PeerConnection> {
        lock.withLock { routes.append(route) }
        guard let relay else { return eventLoop.makeFailedFuture(PeerConnectionError.closed("no broker answers here")) }
        return TCPDialer().dial(.tcp(relay), on: eventLoop, expecting: expecting, hello: hello, settings: settings)
    }
}

@Suite("The link seam: routes dialled by kind, listeners attached to one serving policy")
struct LinkSeamTests {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    static func client(_ live: LiveAgent, dialers: [any LinkDialer]) -> BatonClient {
        var options = BatonClient.Options()
        options.security = live.security
        options.connectTimeout = .seconds(10)
        options.dialers = dialers
        return BatonClient(eventLoop: group.next(), options: options)
    }

    static func brokerRoute(_ live: LiveAgent) -> DeviceRoute {
        .broker(BrokerRoute(account: live.security.trustStore!.credentials.fingerprint.hex, deviceID: live.id))
    }

    static func launch(_ client: BatonClient, _ target: DeviceTarget) async throws -> (LaunchStatus, String) {
        try await client.launch(LaunchRequest(uri: "media:film", appID: "org.example.player"), on: target, timeout: .seconds(20)).get()
    }

    @Test("a broker route no dialer takes is skipped for the TCP route after it; alone, the device has no known route")
    func routeWithoutDialer() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let client = Self.client(live, dialers: [TCPDialer()])
        defer { client.shutdown() }
        let both = DeviceTarget(deviceID: live.id, routes: [Self.brokerRoute(live), .tcp(DeviceAddress(live.address)!)])
        let (status, detail) = try await Self.launch(client, both)
        #expect(status == .success, "\(detail)")
        // A client of its own: the first one's connection to the id would be shared.
        let other = Self.client(live, dialers: [TCPDialer()])
        defer { other.shutdown() }
        let brokerOnly = DeviceTarget(deviceID: live.id, routes: [Self.brokerRoute(live)])
        let (unreached, why) = try await Self.launch(other, brokerOnly)
        #expect(unreached == .remoteSystemUnavailable && why.contains("no route to it is known"), "\(unreached) \(why)")
    }

    @Test("routes are tried in order, each with its kind's dialer: the broker dialer fails, then TCP reaches the agent")
    func fallsThroughInOrder() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let broker = FakeBrokerDialer()
        let client = Self.client(live, dialers: [TCPDialer(), broker])
        defer { client.shutdown() }
        let target = DeviceTarget(deviceID: live.id, routes: [Self.brokerRoute(live), .tcp(DeviceAddress(live.address)!)])
        let (status, detail) = try await Self.launch(client, target)
        #expect(status == .success, "\(detail)")
        #expect(broker.dialled == [Self.brokerRoute(live)])
    }

    @Test("a second kind of dialer carries the session unchanged: TCP refused, the broker dialer's link launches and serves a channel")
    func secondKindCarriesTheSession() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let closed = try await Self.closedPort()
        let broker = FakeBrokerDialer(relay: DeviceAddress(live.address)!)
        let client = Self.client(live, dialers: [TCPDialer(), broker])
        defer { client.shutdown() }
        let target = DeviceTarget(deviceID: live.id, routes: [.tcp(closed), Self.brokerRoute(live)])
        let (status, detail) = try await Self.launch(client, target)
        #expect(status == .success, "\(detail)")
        let reply = try await client.send(["text": .string("hi")], to: "echo", app: "org.example.player", on: target, timeout: .seconds(20)).get()
        #expect(reply.status == .success && reply.message?["text"] == .string("hi"), "\(reply)")
        #expect(broker.dialled == [Self.brokerRoute(live)], "one link, shared by the launch and the channel")
    }

    @Test("a listener attached to the agent's server is served by the same policy and stops with it")
    func attachedListener() async throws {
        let security = try LiveAgent.makeSecurity()
        let defaults = AgentConfiguration(device: DeviceInfo(id: security.trustStore!.credentials.deviceID, name: "x", kind: .desktop))
        let agent = try await Agent.start(
            config: .string(LiveAgent.config, chunkName: "agent.lua"), defaults: defaults, options: RuntimeOptions(),
            on: Self.group.next()).get()
        defer { agent.stop() }
        let server = try await agent.listen(host: "127.0.0.1", port: 0, security: security).get()
        let second = TCPListener(host: "127.0.0.1", port: 0, security: security)
        try await server.attach(second).get()
        let port = try await server.policy.eventLoop.submit { second.localAddress?.port }.get()
        let live = LiveAgent(agent: agent, address: "127.0.0.1:\(try #require(port))", security: security)
        let first = DeviceTarget(deviceID: live.id, routes: [.tcp(DeviceAddress(host: "127.0.0.1", port: server.localAddress.port!))])
        let viaSecond = DeviceTarget(deviceID: live.id, routes: [.tcp(DeviceAddress(live.address)!)])
        let one = Self.client(live, dialers: [TCPDialer()]), two = Self.client(live, dialers: [TCPDialer()])
        defer { one.shutdown(); two.shutdown() }
        #expect(try await Self.launch(one, first).0 == .success)
        #expect(try await Self.launch(two, viaSecond).0 == .success)
        #expect(try await server.policy.eventLoop.submit { server.connectionCount }.get() == 2)
        try await server.shutdown(grace: .seconds(2)).get()
        let three = Self.client(live, dialers: [TCPDialer()])
        defer { three.shutdown() }
        let (after, why) = try await Self.launch(three, viaSecond)
        #expect(after == .remoteSystemUnavailable, "the attached listener still answers: \(why)")
    }

    /// A loopback port nothing listens on.
    static func closedPort() async throws -> DeviceAddress {
        let channel = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return DeviceAddress(host: "127.0.0.1", port: port)
    }
}
