import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Advertises one DNS-SD service instance over mDNS (RFC 6762, RFC 6763): by default an instance
/// of `_baton._tcp.local.` named after the device.
///
/// ``start()`` probes for the instance and host names (three probes 250 ms apart, after a
/// random 0–250 ms wait), renames on conflict (`Living Room TV` → `Living Room TV (2)` → …,
/// RFC 6762 §9), then announces twice, one second apart. From then on it answers queries for
/// its records (multicast, unicast when asked or to legacy resolvers), leaves out what the
/// querier already knows, and defends its names: a conflicting record seen later sends it back
/// to probing, and so to a new name if the other host keeps its claim. Once renamed, it probes
/// for the name asked for again (after ``Timing/reclaimInterval``, backing off to
/// ``Timing/maximumReclaimInterval``, sooner when the holder says goodbye) and takes it back as
/// soon as no one holds it. A goodbye someone else sends for records it still holds is answered
/// by announcing them again within ``Timing/goodbyeDefenseInterval`` (RFC 6762 §10.1), so a
/// spoofed goodbye does not make the instance vanish. ``stop()`` says goodbye.
///
/// Records: PTR `service → instance` (shared), SRV and TXT of the instance, and A/AAAA of the
/// host name (unique, with the cache-flush bit), plus PTR `_services._dns-sd._udp.local. →
/// service` (RFC 6763 §9). A query is answered with the addresses of the interface it came in
/// on.
///
/// Thread-safe: every method may be called from any thread, and the work happens on the
/// transport's event loop.
public final class MDNSResponder: @unchecked Sendable {
    /// The loop the responder runs on: its transport's.
    public let eventLoop: any EventLoop
    /// The DNS-SD service type advertised, `_baton._tcp.local.` unless given.
    public let serviceType: DNSName
    /// The TCP port the SRV record gives.
    public let port: UInt16
    /// Delays, counts and TTLs.
    public let timing: Timing
    /// Every instance name the responder moves to after a conflict, in order, as it moves to
    /// it (before probing for it). Finishes when the responder stops.
    public let nameChanges: AsyncStream<String>

    private let nameContinuation: AsyncStream<String>.Continuation
    private let published: NIOLockedValueBox<(instance: String, host: DNSName)>
    let transport: any MDNSMessageTransport
    let logger: Logger

    // Everything below is touched on `eventLoop` only.
    /// The instance name now: the first label of the instance's full name.
    var instanceLabel: String
    var host: DNSName
    var txt: [DNSTXTEntry]
    var phase = Phase.idle
    var probesSent = 0
    /// Whether records of the current names may sit in caches, so that a goodbye is owed.
    var hasAnnounced = false
    var probeTask: Scheduled<Void>?
    /// Announcements still to come, by a number of their own so each can forget itself.
    var announcementTasks: [Int: Scheduled<Void>] = [:]
    var nextTaskID = 0
    var listenerID: MDNSListenerID?
    /// Completed, and forgotten, when probing first succeeds.
    var startPromise: EventLoopPromise<String>?
    var startFuture: EventLoopFuture<String>?
    /// Whether probing waits for an interface to probe on.
    var waitingForInterface = false
    var recentConflicts: [NIODeadline] = []
    var pendingResponses: [PendingKey: PendingResponse] = [:]
    /// When each of our records was last multicast on each interface, for QU answers (§5.4).
    var lastMulticast: [RecordKey: [Int: NIODeadline]] = [:]
    /// The instance name asked for, which the responder goes back to after a conflict ends.
    let preferredLabel: String
    /// The next probe for the preferred name while renamed, or the wait before it.
    var reclaimTask: Scheduled<Void>?
    /// Probes sent in the reclaim under way; 0 while none is.
    var reclaimProbesSent = 0
    /// Reclaims that found the preferred name still taken since the last rename, for backoff.
    var reclaimFailures = 0
    /// When a goodbye for the preferred name last brought a reclaim forward.
    var lastReclaimNudge: NIODeadline?
    /// Re-announcements answering goodbyes for our records, by interface (nil: all), when
    /// sent or due.
    var goodbyeDefenses: [Int?: NIODeadline] = [:]
    var goodbyeDefenseTasks: [Int?: Scheduled<Void>] = [:]
    /// When a spoofed goodbye was last logged, so a stream of them logs once a minute.
    var lastGoodbyeLog: NIODeadline?

    enum Phase {
        case idle, probing, announced, stopped
    }

    /// Identifies a record regardless of TTL and cache-flush bit.
    struct RecordKey: Hashable {
        var name: DNSName
        var data: DNSRecordData

        init(_ record: DNSResourceRecord) {
            name = record.name
            data = record.data
        }
    }

    /// One multicast answer being held back (§6), to which later queries add (aggregation).
    struct PendingKey: Hashable {
        var interfaceIndex: Int?
        var family: MDNSAddressFamily
    }

    struct PendingResponse {
        var answers: [DNSResourceRecord]
        var additionals: [DNSResourceRecord]
        var task: Scheduled<Void>
    }

    /// A responder for `instanceName` on `transport`, not yet started.
    ///
    /// - Parameters:
    ///   - instanceName: The name people see, such as `Living Room TV`: any UTF-8, cut at a
    ///     character boundary to the 63 bytes a DNS label holds (fewer if the service type is
    ///     very long); empty becomes `Baton`.
    ///   - port: The service's TCP port, for the SRV record.
    ///   - txt: The TXT record's entries (RFC 6763 §6).
    ///   - hostName: The host name of the SRV target and the A/AAAA records, which this
    ///     responder probes for and owns; pass one that no other responder on the host
    ///     advertises. Nil makes a random `baton-<8 hex digits>.local.`.
    ///   - serviceType: The DNS-SD type, `_baton._tcp.local.` by default.
    public convenience init(
        instanceName: String, port: UInt16, txt: [DNSTXTEntry] = [], hostName: DNSName? = nil,
        serviceType: DNSName = .batonService, transport: MDNSTransport, timing: Timing = Timing(),
        logger: Logger = Logger(label: "baton.mdns")
    ) {
        self.init(
            instanceName: instanceName, port: port, txt: txt, hostName: hostName, serviceType: serviceType,
            messageTransport: transport, timing: timing, logger: logger)
    }

    /// As the public initializer, over any transport (the tests' in-memory one).
    package init(
        instanceName: String, port: UInt16, txt: [DNSTXTEntry] = [], hostName: DNSName? = nil,
        serviceType: DNSName = .batonService, messageTransport transport: any MDNSMessageTransport,
        timing: Timing = Timing(), logger: Logger = Logger(label: "baton.mdns")
    ) {
        self.eventLoop = transport.eventLoop
        self.transport = transport
        self.serviceType = serviceType
        self.port = port
        self.timing = timing
        self.logger = logger
        self.txt = txt
        let limit = Self.labelLimit(for: serviceType)
        var label = Self.fitLabel(instanceName, limit: limit)
        if label.isEmpty { label = Self.fitLabel("Baton", limit: limit) }
        self.instanceLabel = label
        self.preferredLabel = label
        let host = hostName ?? Self.randomHostName()
        self.host = host
        self.published = NIOLockedValueBox((label, host))
        (nameChanges, nameContinuation) = AsyncStream.makeStream(of: String.self)
    }

    /// The instance name now: the one asked for, or the one moved to after a conflict.
    public var instanceName: String {
        published.withLockedValue { $0.instance }
    }

    /// The instance name asked for, fitted to a DNS label: the one the responder goes back to
    /// after a conflict ends.
    public var preferredName: String { preferredLabel }

    /// The host name now: the one given or made up, or the one moved to after a conflict.
    public var hostName: DNSName {
        published.withLockedValue { $0.host }
    }

    /// Starts probing. The future succeeds with the instance name once probing on at least one
    /// interface is over and the first announcement is out (renamed if the name was taken), and
    /// fails with `CancellationError` if the responder is stopped first. With no usable
    /// interface, probing waits for one. Starting again returns the same future.
    public func start() -> EventLoopFuture<String> {
        eventLoop.flatSubmit { [self] in
            if let startFuture { return startFuture }
            let promise = eventLoop.makePromise(of: String.self)
            startPromise = promise
            startFuture = promise.futureResult
            guard phase == .idle else {
                promise.fail(CancellationError())
                return promise.futureResult
            }
            listenerID = transport.addListener { [weak self] event in self?.handle(event) }
            startProbing(after: .random(in: timing.probeDelay))
            return promise.futureResult
        }
    }

    /// Replaces the TXT entries and announces the new record (RFC 6762 §8.4).
    public func update(txt: [DNSTXTEntry]) {
        eventLoop.execute { [self] in
            guard phase != .stopped, txt != self.txt else { return }
            self.txt = txt
            // Held answers carry the old TXT; the announcement carries everything anew.
            for pending in pendingResponses.values { pending.task.cancel() }
            pendingResponses = [:]
            if phase == .announced {
                announce(on: nil)
            }
        }
    }

    /// Stops answering and, if the records were announced, multicasts them with TTL 0 on every
    /// interface (RFC 6762 §10.1) so that browsers drop them now rather than at expiry. The
    /// future succeeds once the goodbye is handed to the system. Stopping again does nothing.
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            guard phase != .stopped else { return eventLoop.makeSucceededVoidFuture() }
            let owesGoodbye = hasAnnounced
            cancelTimers()
            phase = .stopped
            if let listenerID { transport.removeListener(listenerID) }
            listenerID = nil
            startPromise?.fail(CancellationError())
            startPromise = nil
            nameContinuation.finish()
            guard owesGoodbye else { return eventLoop.makeSucceededVoidFuture() }
            logger.debug("mDNS: goodbye", metadata: ["instance": "\(instanceLabel)"])
            return sendGoodbye()
        }
    }

    // MARK: - Events

    func handle(_ event: MDNSTransportEvent) {
        guard phase == .probing || phase == .announced else { return }
        switch event {
        case .message(let received):
            let message = received.message
            guard message.opcode == 0, message.responseCode == 0 else { return }  // RFC 6762 §18.3, §18.11
            if message.isResponse {
                handleResponse(received)
            } else {
                handleQuery(received)
            }
        case .interfaceAdded, .interfaceChanged:
            // A link change: probe and announce again (RFC 6762 §8), on every interface, as our
            // names may be taken on the new link. A probe already under way includes it anyway.
            if phase == .announced || waitingForInterface {
                startProbing(after: .random(in: timing.probeDelay))
            }
        case .interfaceRemoved(let interface):
            for key in pendingResponses.keys where key.interfaceIndex == interface.index {
                pendingResponses.removeValue(forKey: key)?.task.cancel()
            }
        }
    }

    func cancelTimers() {
        probeTask?.cancel()
        probeTask = nil
        for task in announcementTasks.values { task.cancel() }
        announcementTasks = [:]
        for pending in pendingResponses.values { pending.task.cancel() }
        pendingResponses = [:]
        cancelReclaim()
        for task in goodbyeDefenseTasks.values { task.cancel() }
        goodbyeDefenseTasks = [:]
    }

    /// Makes the names now in use visible to other threads, and the instance name to
    /// ``nameChanges`` when it changed.
    func publishNames() {
        let old = published.withLockedValue { old in
            defer { old = (instanceLabel, host) }
            return old.instance
        }
        if old != instanceLabel {
            nameContinuation.yield(instanceLabel)
        }
    }
}
