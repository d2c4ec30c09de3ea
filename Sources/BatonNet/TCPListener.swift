import BatonWire
import NIOCore
import NIOPosix

/// The agent's TCP listener: binds `host:port` (TCP_NODELAY on every connection), counts
/// connections in all and per IP address before any TLS work (past ``AgentServer/Admission``'s
/// limits a connection is turned away as it comes), puts mutual TLS (or loopback plaintext)
/// on the rest and hands them to the ``ServingPolicy`` with their IP address as origin.
public final class TCPListener: LinkListener, @unchecked Sendable {
    private let host: String
    private let port: Int
    private let security: ConnectionSecurity
    private let admission: AgentServer.Admission
    private let limits: FrameLimits
    private let busyPoll: TimeAmount
    private var channel: (any Channel)?
    /// Connections open (every one, from its first moment), by IP address.
    private var open = ConnectionCount()

    /// A listener for `host:port` (port 0: one the system picks); `.insecure` binds loopback
    /// addresses only (``AgentServerError/insecureNeedsLoopback(_:)`` at ``start(policy:)``).
    public init(
        host: String, port: Int, security: ConnectionSecurity, admission: AgentServer.Admission = AgentServer.Admission(),
        limits: FrameLimits = FrameLimits(), timing: PeerConnection.Timing = PeerConnection.Timing()
    ) {
        self.host = host
        self.port = port
        self.security = security
        self.admission = admission
        self.limits = limits
        busyPoll = timing.busyPoll
    }

    /// The address bound, once started. Ask on the policy's loop.
    public var localAddress: SocketAddress? { channel?.localAddress }

    public func start(policy: ServingPolicy) -> EventLoopFuture<Void> {
        let eventLoop = policy.eventLoop
        if case .insecure = security, !ConnectionSecurity.isLoopback(host) {
            return eventLoop.makeFailedFuture(AgentServerError.insecureNeedsLoopback(host))
        }
        let (security, limits, busyPoll) = (security, limits, busyPoll)
        // Its state is the loop's: the child initializer and `map` run there.
        return ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let origin = channel.remoteAddress?.ipAddress ?? "?"
                    if let refusal = self.arrived(channel, from: origin) {
                        policy.noteBusy(origin: "\(channel.remoteAddress.map { "\($0)" } ?? "?")", refusal)
                        // Closed as soon as it is up (it is not yet), before any TLS work: a
                        // plaintext caller hears why first.
                        let plaintext = if case .insecure = security { true } else { false }
                        try channel.pipeline.syncOperations.addHandler(TurnAway(detail: plaintext ? refusal : nil))
                        return
                    }
                    _ = try TCPLink.install(
                        on: channel, role: .server, security: security, expectation: PeerExpectation(), limits: limits,
                        busyPoll: busyPoll
                    ) { link in
                        policy.serve(link, origin: origin)
                    }
                }
            }
            .bind(host: host, port: port)
            .map { channel in self.channel = channel }
    }

    /// A connection arrived: counted against its address and the total, or refused (why).
    /// Counted until it closes.
    private func arrived(_ channel: any Channel, from address: String) -> String? {
        if let refusal = open.refusal(of: address, total: admission.connections, perAddress: admission.connectionsPerAddress, "") {
            return refusal
        }
        open.add(address)
        channel.closeFuture.whenComplete { [self] _ in open.remove(address) }
        return nil
    }

    public func stopAccepting() -> EventLoopFuture<Void> {
        guard let channel else { return MultiThreadedEventLoopGroup.singleton.any().makeSucceededVoidFuture() }
        return channel.close().recover { _ in }
    }

    public func shutdown() -> EventLoopFuture<Void> {
        stopAccepting()
    }
}

/// Closes a connection refused as it came, once it is up: after Goodbye `busy` when `detail`
/// is given (plaintext), else at once (TLS: nothing can be said before a handshake).
private final class TurnAway: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let detail: String?

    init(detail: String?) { self.detail = detail }

    func channelActive(context: ChannelHandlerContext) {
        if let detail {
            var buffer = context.channel.allocator.buffer(capacity: 128)
            if (try? FrameEncoder.encode(.goodbye(.busy, detail: detail), into: &buffer, maxFrameSize: FrameLimits.hardLimit)) != nil {
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
        }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
