import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// Listens for Baton clients. Every connection runs on the server's one event loop (the
/// agent's), so requests reach the agent's Lua runtime without a thread hop.
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

    /// The address actually bound (the port is chosen when asked for 0).
    public let localAddress: SocketAddress
    private let channel: any Channel
    let eventLoop: any EventLoop
    private var connections: [ObjectIdentifier: PeerConnection] = [:]
    private let admission: Admission
    /// Connections open (every one, from its first moment), and those of strangers.
    private var open = ConnectionCount()
    private var anonymous = ConnectionCount()
    /// Callers refused and connections lost, logged at a bounded rate.
    let refusals: RefusalLog
    /// The account's trust store, with TLS.
    private let trustStore: TrustStore?
    /// The revocation list's version when callers were last checked against it.
    private var revocationVersion: Int
    private var revocationCheck: RepeatedTask?

    /// How often the revocation list in the folder is looked at (one `stat`, on a thread of
    /// its own), so that a device revoked on this one (`baton account revoke`) loses the
    /// connections it holds.
    static let revocationCheckInterval: TimeAmount = .seconds(1)

    private init(channel: any Channel, eventLoop: any EventLoop, trustStore: TrustStore?, admission: Admission, refusals: RefusalLog) {
        self.admission = admission
        self.refusals = refusals
        self.channel = channel
        self.eventLoop = eventLoop
        self.localAddress = channel.localAddress!
        self.trustStore = trustStore
        revocationVersion = trustStore?.trust.revocations.version ?? 0
        if let trustStore {
            revocationCheck = eventLoop.scheduleRepeatedAsyncTask(
                initialDelay: Self.revocationCheckInterval, delay: Self.revocationCheckInterval
            ) { [weak self] _ in
                // The folder's files are read off the loop: another process may hold its lock.
                let server = NIOLoopBound(self, eventLoop: eventLoop)
                return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { trustStore.refresh() }.map { () -> Void in
                    server.value?.checkRevocations()
                }
            }
        }
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
        if case .insecure = security, !ConnectionSecurity.isLoopback(host) {
            return eventLoop.makeFailedFuture(AgentServerError.insecureNeedsLoopback(host))
        }
        let registry = NIOLoopBound(ServerRegistry(), eventLoop: eventLoop)
        let refusals = RefusalLog(logger: logger, eventLoop: eventLoop)
        return ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let server = registry.value.server
                    if let server, let refusal = server.arrived(channel) {
                        refusals.note(.busy, "refused a caller", peer: "\(channel.remoteAddress.map { "\($0)" } ?? "?")", detail: refusal)
                        // Closed as soon as it is up (it is not yet), before any TLS work: a
                        // plaintext caller hears why first.
                        let plaintext = if case .insecure = security { true } else { false }
                        try channel.pipeline.syncOperations.addHandler(TurnAway(detail: plaintext ? refusal : nil))
                        return
                    }
                    let connection = try TCPLink.install(
                        on: channel, role: .server, security: security, expectation: PeerExpectation(), limits: limits,
                        busyPoll: timing.busyPoll
                    ) { link in
                        let connection = PeerConnection(
                            role: .server, link: link, limits: limits, timing: timing, trustStore: security.trustStore, logger: logger)
                        connection.delegate = makeDelegate(connection)
                        return connection
                    }
                    server?.track(connection)
                    connection.refusalLog = refusals
                    connection.admission = { [weak server] identity in server?.admit(identity, on: channel) }
                    connection.revocationListAdopted = { server?.dropRevokedCallers() }
                }
            }
            .bind(host: host, port: port)
            .map { channel in
                let server = AgentServer(
                    channel: channel, eventLoop: eventLoop, trustStore: security.trustStore, admission: admission, refusals: refusals)
                registry.value.server = server
                return server
            }
    }

    /// A connection arrived: counted against its address and the total, or refused (why).
    /// Counted until it closes.
    private func arrived(_ channel: any Channel) -> String? {
        let address = Self.address(of: channel)
        if let refusal = open.refusal(of: address, total: admission.connections, perAddress: admission.connectionsPerAddress, "") {
            return refusal
        }
        open.add(address)
        channel.closeFuture.whenComplete { [self] _ in open.remove(address) }
        return nil
    }

    /// A caller proved who it is: a stranger counts against the strangers' limits (until its
    /// connection closes), or is refused (why).
    private func admit(_ identity: PeerIdentity, on channel: any Channel) -> String? {
        guard identity.authorization == .anonymous else { return nil }
        let address = Self.address(of: channel)
        if let refusal = anonymous.refusal(
            of: address, total: admission.anonymousConnections, perAddress: admission.anonymousConnectionsPerAddress,
            " of other accounts") {
            return refusal
        }
        anonymous.add(address)
        channel.closeFuture.whenComplete { [self] _ in anonymous.remove(address) }
        return nil
    }

    private static func address(of channel: any Channel) -> String {
        channel.remoteAddress?.ipAddress ?? "?"
    }

    private func track(_ connection: PeerConnection) {
        let key = ObjectIdentifier(connection)
        connections[key] = connection
        connection.closeFuture.whenComplete { [self] _ in connections[key] = nil }
    }

    /// Drops revoked callers when the folder's revocation list changed since the last look:
    /// written there by another process, not adopted from a caller (which drops them at once).
    private func checkRevocations() {
        guard let version = trustStore?.trust.revocations.version, version != revocationVersion else { return }
        dropRevokedCallers()
    }

    /// Says goodbye to callers whose devices the revocation list now revokes: a list adopted
    /// from one caller shuts the door on the others at once.
    func dropRevokedCallers() {
        eventLoop.preconditionInEventLoop()
        guard let revocations = trustStore?.trust.revocations else { return }
        revocationVersion = revocations.version
        for connection in connections.values {
            guard let identity = connection.peerIdentity, identity.authorization == .sameAccount, let id = identity.deviceID,
                  revocations.entries.contains(where: { $0.id == id }) else { continue }
            connection.logger.warning("dropping a revoked caller", metadata: ["device": "\(id)"])
            connection.goodbye(.unknown, "device \(id) is revoked")
        }
    }

    /// How many clients are connected. Ask on the server's loop.
    public var connectionCount: Int {
        eventLoop.preconditionInEventLoop()
        return connections.count
    }

    /// Stops listening; lets every client's requests in flight get their answers (for up to
    /// `grace`), then says Goodbye (shutdown) — their open channels get `canceled` — and
    /// closes. The future completes when every connection is closed. Call from any thread.
    public func shutdown(grace: TimeAmount = .seconds(5)) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            revocationCheck?.cancel()
            revocationCheck = nil
            refusals.close()
            let listening = channel.close().recover { _ in }
            let closing = connections.values.map { $0.drainAndClose(.shutdown, "the agent is shutting down", grace: grace) }
            return EventLoopFuture.andAllComplete([listening] + closing, on: eventLoop)
        }
    }
}

/// Why an agent cannot listen.
public enum AgentServerError: Error, Sendable, CustomStringConvertible {
    /// Plaintext was asked for on an address that is not loopback.
    case insecureNeedsLoopback(String)

    public var description: String {
        switch self {
        case .insecureNeedsLoopback(let host):
            "--insecure (plaintext) listens on loopback addresses only (127.0.0.1, ::1), not \(host)"
        }
    }
}

/// Connections open, in all and by IP address.
private struct ConnectionCount {
    private(set) var total = 0
    private var byAddress: [String: Int] = [:]

    /// Why one more from `address` is one too many (`kind` names them: " of other accounts"),
    /// or nil.
    func refusal(of address: String, total limit: Int, perAddress: Int, _ kind: String) -> String? {
        if total >= limit { return "the agent has \(total) connections\(kind) open, as many as it takes" }
        if byAddress[address, default: 0] >= perAddress {
            return "\(perAddress) connections\(kind) are open from \(address), as many as the agent takes from one address"
        }
        return nil
    }

    mutating func add(_ address: String) {
        total += 1
        byAddress[address, default: 0] += 1
    }

    mutating func remove(_ address: String) {
        total -= 1
        byAddress[address, default: 1] -= 1
        if byAddress[address] == 0 { byAddress[address] = nil }
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

/// Holds the server for the child initializer, which runs before `bind` returns it.
private final class ServerRegistry {
    var server: AgentServer?
}
