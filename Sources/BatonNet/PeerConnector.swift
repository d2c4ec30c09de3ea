import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// Connects to an agent and completes once the handshake is done.
public enum PeerConnector {
    /// Connects to `host:port`, proves this device and checks the agent against `expecting`
    /// in the TLS handshake (`.tls`), says `hello`, and waits for the HelloAck. Fails with
    /// ``PeerConnectionError`` (`untrustedPeer`, `refusedByPeer` among them) or NIO's connect
    /// errors (refused, timed out). `.insecure` dials loopback addresses only.
    public static func connect(
        host: String, port: Int, on eventLoop: any EventLoop, security: ConnectionSecurity,
        expecting expectation: PeerExpectation = PeerExpectation(), hello: Hello,
        connectTimeout: TimeAmount = .seconds(3), limits: FrameLimits = FrameLimits(),
        timing: PeerConnection.Timing = PeerConnection.Timing(), delegate: (any PeerConnectionDelegate)? = nil,
        logger: Logger
    ) -> EventLoopFuture<PeerConnection> {
        if case .insecure = security, !ConnectionSecurity.isLoopback(host) {
            return eventLoop.makeFailedFuture(PeerConnectionError.untrustedPeer(
                "--insecure (plaintext) dials loopback addresses only, not \(host)"))
        }
        let connection = NIOLoopBoundBox.makeEmptyBox(valueType: PeerConnection.self, eventLoop: eventLoop)
        let connected = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    connection.value = try TCPLink.install(
                        on: channel, role: .client, security: security, expectation: expectation, limits: limits,
                        busyPoll: timing.busyPoll
                    ) { link in
                        PeerConnection(
                            role: .client, link: link, hello: hello, limits: limits, timing: timing,
                            trustStore: security.trustStore, delegate: delegate, logger: logger)
                    }
                }
            }
            .connect(host: host, port: port)
        // The handshake has the connect timeout too: an agent that accepts and says nothing.
        return connected.flatMap { _ in
            guard let peer = connection.value else {
                return eventLoop.makeFailedFuture(PeerConnectionError.closed("the connection was not set up"))
            }
            let timeout = eventLoop.scheduleTask(in: connectTimeout) {
                peer.goodbye(.timeout, "no HelloAck within the connect timeout")
            }
            return peer.handshakeDone.always { _ in timeout.cancel() }.map { peer }
        }
    }
}
