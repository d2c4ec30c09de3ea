import BatonCore
import BatonWire
import NIOCore
import NIOPosix

/// Dials `.tcp` routes: a TCP connection (TCP_NODELAY) with mutual TLS, or plaintext to
/// loopback agents only.
public struct TCPDialer: LinkDialer {
    public init() {}

    public func canDial(_ route: DeviceRoute) -> Bool { route.endpoint != nil }

    public func dial(
        _ route: DeviceRoute, on eventLoop: any EventLoop, expecting: PeerExpectation, hello: Hello, settings: DialSettings
    ) -> EventLoopFuture<PeerConnection> {
        guard let endpoint = route.endpoint else {
            return eventLoop.makeFailedFuture(PeerConnectionError.closed("\(route) is not a TCP route"))
        }
        return dial(host: endpoint.host, port: endpoint.port, on: eventLoop, expecting: expecting, hello: hello, settings: settings)
    }

    /// Connects to `host:port`, proves this device and checks the agent against `expecting`
    /// in the TLS handshake, says `hello`, and waits for the HelloAck.
    func dial(
        host: String, port: Int, on eventLoop: any EventLoop, expecting: PeerExpectation, hello: Hello, settings: DialSettings
    ) -> EventLoopFuture<PeerConnection> {
        if case .insecure = settings.security, !ConnectionSecurity.isLoopback(host) {
            return eventLoop.makeFailedFuture(PeerConnectionError.untrustedPeer(
                "--insecure (plaintext) dials loopback addresses only, not \(host)"))
        }
        let connection = NIOLoopBoundBox.makeEmptyBox(valueType: PeerConnection.self, eventLoop: eventLoop)
        let connected = ClientBootstrap(group: eventLoop)
            .connectTimeout(settings.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    connection.value = try TCPLink.install(
                        on: channel, role: .client, security: settings.security, expectation: expecting, limits: settings.limits,
                        busyPoll: settings.timing.busyPoll
                    ) { link in
                        settings.clientConnection(over: link, hello: hello)
                    }
                }
            }
            .connect(host: host, port: port)
        // The handshake has the connect timeout too: an agent that accepts and says nothing.
        return connected.flatMap { _ in
            guard let peer = connection.value else {
                return eventLoop.makeFailedFuture(PeerConnectionError.closed("the connection was not set up"))
            }
            return peer.handshake(within: settings.connectTimeout)
        }
    }
}
