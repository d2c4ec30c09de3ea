import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// What an agent does with every link its listeners make, whatever the transport: it puts a
/// server session on the link, tracks it, admits callers by the identity they proved (the
/// stranger limits, counted per origin), drops callers whose devices are revoked, and drains
/// and closes them all at shutdown. Listeners (``LinkListener``: TCP, the broker next) make
/// links and hand them to ``serve(_:origin:)``. Confined to its event loop (the agent's).
public final class ServingPolicy: @unchecked Sendable {
    /// The loop every connection it serves runs on; listeners call it there.
    public let eventLoop: any EventLoop
    private let admission: AgentServer.Admission
    private let limits: FrameLimits
    private let timing: PeerConnection.Timing
    private let logger: Logger
    private let makeDelegate: @Sendable (PeerConnection) -> any PeerConnectionDelegate
    /// The account's trust store, with TLS (nil on plaintext).
    private let trustStore: TrustStore?
    private var connections: [ObjectIdentifier: PeerConnection] = [:]
    /// Callers of other accounts, or none, in all and by origin.
    private var anonymous = ConnectionCount()
    /// Callers refused and connections lost, logged at a bounded rate.
    let refusals: RefusalLog
    /// The revocation list's version when callers were last checked against it.
    private var revocationVersion: Int
    private var revocationCheck: RepeatedTask?

    /// How often the revocation list in the folder is looked at (one `stat`, on a thread of
    /// its own), so that a device revoked on this one (`baton account revoke`) loses the
    /// connections it holds.
    static let revocationCheckInterval: TimeAmount = .seconds(1)

    /// A policy serving on `eventLoop`; `makeDelegate` gives each new connection its delegate.
    /// With a trust store it starts looking at the folder's revocation list.
    public init(
        eventLoop: any EventLoop, trustStore: TrustStore?, admission: AgentServer.Admission = AgentServer.Admission(),
        limits: FrameLimits = FrameLimits(), timing: PeerConnection.Timing = PeerConnection.Timing(), logger: Logger,
        makeDelegate: @escaping @Sendable (PeerConnection) -> any PeerConnectionDelegate
    ) {
        self.eventLoop = eventLoop
        self.trustStore = trustStore
        self.admission = admission
        self.limits = limits
        self.timing = timing
        self.logger = logger
        self.makeDelegate = makeDelegate
        refusals = RefusalLog(logger: logger, eventLoop: eventLoop)
        revocationVersion = trustStore?.trust.revocations.version ?? 0
        if let trustStore {
            revocationCheck = eventLoop.scheduleRepeatedAsyncTask(
                initialDelay: Self.revocationCheckInterval, delay: Self.revocationCheckInterval
            ) { [weak self] _ in
                // The folder's files are read off the loop: another process may hold its lock.
                let policy = NIOLoopBound(self, eventLoop: eventLoop)
                return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { trustStore.refresh() }.map { () -> Void in
                    policy.value?.checkRevocations()
                }
            }
        }
    }

    /// The server session for `link`, a link a listener just made from `origin` (an IP
    /// address for TCP, the sender's device id through a broker), which must not have started
    /// yet: return it to the link as its session. It is tracked until it closes; once its
    /// caller proved who it is, a stranger counts against the stranger limits of `origin`, or
    /// hears Goodbye `busy`. Call on ``eventLoop``.
    public func serve(_ link: any Link, origin: String) -> PeerConnection {
        eventLoop.preconditionInEventLoop()
        let connection = PeerConnection(
            role: .server, link: link, limits: limits, timing: timing, trustStore: trustStore, logger: logger)
        connection.delegate = makeDelegate(connection)
        let key = ObjectIdentifier(connection)
        connections[key] = connection
        connection.closeFuture.whenComplete { [self] _ in connections[key] = nil }
        connection.refusalLog = refusals
        // The close future, not the connection: a weak reference would give every connection
        // a side table, and each retain and release of it would take the slow path.
        let closed = connection.closeFuture
        connection.admission = { [weak self] identity in
            self?.admit(identity, origin: origin, until: closed)
        }
        connection.revocationListAdopted = { [weak self] in self?.dropRevokedCallers() }
        return connection
    }

    /// Notes a caller a listener refused before any session (too many connections), at a
    /// bounded rate.
    func noteBusy(origin: String, _ why: String) {
        refusals.note(.busy, "refused a caller", peer: origin, detail: why)
    }

    /// Notes a caller a listener refused before any session because it did not prove who it
    /// is (a sealed hello that does not check out), at a bounded rate, in the refusal log.
    public func noteRefused(origin: String, _ why: String) {
        refusals.note(.refused, "refused a caller", peer: origin, detail: why)
    }

    /// A caller proved who it is: a stranger counts against the strangers' limits (until
    /// `closed`), or is refused (why).
    private func admit(_ identity: PeerIdentity, origin: String, until closed: EventLoopFuture<Void>) -> String? {
        guard identity.authorization == .anonymous else { return nil }
        if let refusal = anonymous.refusal(
            of: origin, total: admission.anonymousConnections, perAddress: admission.anonymousConnectionsPerAddress,
            " of other accounts") {
            return refusal
        }
        anonymous.add(origin)
        closed.whenComplete { [self] _ in anonymous.remove(origin) }
        return nil
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

    /// How many callers are connected, over every listener. Ask on ``eventLoop``.
    public var connectionCount: Int {
        eventLoop.preconditionInEventLoop()
        return connections.count
    }

    /// Stops looking at the revocation list; lets every caller's requests in flight get their
    /// answers (for up to `grace`), then says Goodbye (shutdown) and closes. Stop the
    /// listeners taking new links first. Completes when every connection is closed. Call on
    /// ``eventLoop``.
    func drain(grace: TimeAmount) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        revocationCheck?.cancel()
        revocationCheck = nil
        refusals.close()
        let closing = connections.values.map { $0.drainAndClose(.shutdown, "the agent is shutting down", grace: grace) }
        return EventLoopFuture.andAllComplete(closing, on: eventLoop)
    }
}

/// Connections open, in all and by origin (an IP address, a device id).
struct ConnectionCount {
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
