import BatonCore
import BatonSecurity
import BatonWire
import Logging
import NIOCore

/// Makes links of one kind: TCP with mutual TLS (``TCPDialer``), the broker next. A client
/// tries a device's routes in order, each with the first dialer that takes its kind, so a new
/// kind of link is a new dialer and touches no session, multiplexer, handoff or player code.
public protocol LinkDialer: Sendable {
    /// Whether this dialer reaches routes of `route`'s kind.
    func canDial(_ route: DeviceRoute) -> Bool
    /// Makes a link to `route`, checks the peer against `expecting` (identity comes from the
    /// link, never from the route), says `hello` and completes once the HelloAck came, within
    /// ``DialSettings/connectTimeout`` (see ``PeerConnection/handshake(within:)``). Fails with
    /// ``PeerConnectionError`` or the transport's own errors.
    func dial(
        _ route: DeviceRoute, on eventLoop: any EventLoop, expecting: PeerExpectation, hello: Hello, settings: DialSettings
    ) -> EventLoopFuture<PeerConnection>
}

/// What every dial is made with, whatever the link.
public struct DialSettings: Sendable {
    /// Mutual TLS with this device's certificate, or plaintext (to loopback agents only).
    public var security: ConnectionSecurity
    /// How long making the link and the handshake may take together.
    public var connectTimeout: TimeAmount
    /// The largest frame this side accepts.
    public var limits: FrameLimits
    public var timing: PeerConnection.Timing
    /// What the other end asks of this one outside channels.
    public var delegate: (any PeerConnectionDelegate)?
    public var logger: Logger

    public init(
        security: ConnectionSecurity, connectTimeout: TimeAmount = .seconds(3), limits: FrameLimits = FrameLimits(),
        timing: PeerConnection.Timing = PeerConnection.Timing(), delegate: (any PeerConnectionDelegate)? = nil, logger: Logger
    ) {
        self.security = security
        self.connectTimeout = connectTimeout
        self.limits = limits
        self.timing = timing
        self.delegate = delegate
        self.logger = logger
    }

    /// The client session a dialer puts on a link it made (before the link starts): it says
    /// `hello` once the link has established the peer's identity.
    public func clientConnection(over link: any Link, hello: Hello) -> PeerConnection {
        PeerConnection(
            role: .client, link: link, hello: hello, limits: limits, timing: timing, trustStore: security.trustStore,
            delegate: delegate, logger: logger)
    }
}
