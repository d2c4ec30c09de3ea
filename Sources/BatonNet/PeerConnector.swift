import BatonSecurity
import BatonWire
import Logging
import NIOCore

/// Connects to an agent over TCP and completes once the handshake is done: ``TCPDialer`` by
/// `host:port`.
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
        let settings = DialSettings(
            security: security, connectTimeout: connectTimeout, limits: limits, timing: timing, delegate: delegate, logger: logger)
        return TCPDialer().dial(host: host, port: port, on: eventLoop, expecting: expectation, hello: hello, settings: settings)
    }
}
