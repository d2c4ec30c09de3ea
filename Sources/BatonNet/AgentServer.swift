import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// Listens for Baton clients: a ``TCPListener`` and any other ``LinkListener`` attached,
/// handing their links to one ``ServingPolicy``. Every connection runs on the server's one
/// event loop (the agent's), so requests reach the agent's Lua runtime without a thread hop.
public final class AgentServer: @unchecked Sendable {
    /// How many connections the server holds at once (`Protocol/baton.proto`, LIMITS): a
    /// stranger meets these first. Past them a connection is closed as soon as it comes, before
    /// any TLS work (a plaintext one hears Goodbye `busy` first); past the stranger limits, a
    /// caller that proved to be of another account, or none, hears Goodbye `busy` after its
    /// handshake.
    public struct Admission: Sendable {
        /// In all.
        public var connections = 1024
        /// From one IP address.
        public var connectionsPerAddress = 64
        /// From callers of other accounts, or none, in all and from one address.
        public var anonymousConnections = 128
        public var anonymousConnectionsPerAddress = 8
        public init() {}
    }

    /// The TCP address actually bound (the port is chosen when asked for 0).
    public let localAddress: SocketAddress
    let eventLoop: any EventLoop
    /// What every listener's links are served by.
    public let policy: ServingPolicy
    private var listeners: [any LinkListener]
    private var shuttingDown = false
    /// Callers refused and connections lost, logged at a bounded rate.
    var refusals: RefusalLog { policy.refusals }

    private init(policy: ServingPolicy, tcp: TCPListener, localAddress: SocketAddress) {
        self.policy = policy
        eventLoop = policy.eventLoop
        listeners = [tcp]
        self.localAddress = localAddress
    }

    /// Binds `host:port` on `eventLoop`; `makeDelegate` gives each new connection its delegate.
    /// With `.tls`, every caller's certificate is judged by the trust store before it may say
    /// Hello (see ``PeerConnection/peerIdentity``); `.insecure` binds loopback addresses only
    /// and fails with ``AgentServerError/insecureNeedsLoopback`` for any other.
    public static func bind(
        host: String, port: Int, on eventLoop: any EventLoop, security: ConnectionSecurity, limits: FrameLimits = FrameLimits(),
        timing: PeerConnection.Timing = PeerConnection.Timing(), admission: Admission = Admission(), logger: Logger,
        makeDelegate: @escaping @Sendable (PeerConnection) -> any PeerConnectionDelegate
    ) -> EventLoopFuture<AgentServer> {
        let policy = ServingPolicy(
            eventLoop: eventLoop, trustStore: security.trustStore, admission: admission, limits: limits, timing: timing,
            logger: logger, makeDelegate: makeDelegate)
        let tcp = TCPListener(host: host, port: port, security: security, admission: admission, limits: limits, timing: timing)
        return tcp.start(policy: policy).map {
            AgentServer(policy: policy, tcp: tcp, localAddress: tcp.localAddress!)
        }.flatMapError { error in
            // Nothing listens: the policy stops looking at the revocation list.
            policy.drain(grace: .zero).flatMapThrowing { _ -> AgentServer in throw error }
        }
    }

    /// Starts `listener` (a second kind of link: the broker's), whose links this server's
    /// policy serves as it serves TCP's; ``shutdown(grace:)`` stops it with the others. Fails
    /// as its start does, or once the server is shutting down. Call from any thread.
    public func attach(_ listener: any LinkListener) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            guard !shuttingDown else { return eventLoop.makeFailedFuture(AgentServerError.shuttingDown) }
            listeners.append(listener)
            return listener.start(policy: policy)
        }
    }

    /// How many clients are connected, over every listener. Ask on the server's loop.
    public var connectionCount: Int {
        policy.connectionCount
    }

    /// Stops listening; lets every client's requests in flight get their answers (for up to
    /// `grace`), then says Goodbye (shutdown) — their open channels get `canceled` — and
    /// closes. The future completes when every connection is closed. Call from any thread.
    public func shutdown(grace: TimeAmount = .seconds(5)) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            shuttingDown = true
            let listeners = listeners
            let stopped = EventLoopFuture.andAllComplete(listeners.map { $0.stopAccepting() }, on: eventLoop)
            return stopped.flatMap { [policy] in policy.drain(grace: grace) }.flatMap { [eventLoop] in
                EventLoopFuture.andAllComplete(listeners.map { $0.shutdown() }, on: eventLoop)
            }
        }
    }
}

/// Why an agent cannot listen.
public enum AgentServerError: Error, Sendable, CustomStringConvertible {
    /// Plaintext was asked for on an address that is not loopback.
    case insecureNeedsLoopback(String)
    /// A listener was attached while the server was shutting down.
    case shuttingDown

    public var description: String {
        switch self {
        case .insecureNeedsLoopback(let host):
            "--insecure (plaintext) listens on loopback addresses only (127.0.0.1, ::1), not \(host)"
        case .shuttingDown:
            "the agent is shutting down"
        }
    }
}
