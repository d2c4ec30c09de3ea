import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Finds the instances of one DNS-SD service type over mDNS (RFC 6762, RFC 6763), by default
/// `_baton._tcp.local.`, and reports them as they come, change and go.
///
/// ``start()`` multicasts the first PTR query at once, then again after 1, 2, 4 ... seconds up to
/// an hour (RFC 6762 §5.2), each listing the instances already known so that they do not answer
/// again (§7.1). Every response heard is used, whoever asked. With the first query goes a
/// one-shot query from an ephemeral port (§5.1), which responders answer at once by unicast
/// (§6.7) even when they multicast the records less than a second ago and so must wait to
/// multicast them again (§6): without it, a listing right after another querier's would miss
/// them. For each instance it gets the SRV,
/// TXT and the target host's addresses, asking for what an answer left out, and keeps them in a
/// cache that asks again before TTLs run out (§5.2) and honours goodbyes and the cache-flush bit
/// (§10). A goodbye takes effect a second later, so the owner's answer to a forged one cancels
/// it. A flood cannot fill the cache for good: TTLs are cut to 75 minutes, each sender address
/// and the service type have a quota, a sender over its quota is not heard for a while, and a
/// full cache makes room for a newcomer (see ``Timing/cacheCapacity``).
///
/// Events come in order, on the event loop, to the `onEvent` handler if given, and through
/// ``events``: ``Event/added(_:)`` once SRV, TXT and an address are known, ``Event/updated(_:)``
/// on any change, ``Event/removed(instanceName:reason:)`` on goodbye (one second after it, as
/// §10.1 asks), expiry or loss of the interface, and ``Event/enumerationCompleted`` once.
///
/// Thread-safe: every method may be called from any thread.
public final class MDNSBrowser: @unchecked Sendable {
    /// The loop the browser runs on: its transport's.
    public let eventLoop: any EventLoop
    /// The DNS-SD type browsed.
    public let serviceType: DNSName
    /// The query schedule and windows.
    public let timing: Timing
    /// Every event, in order; finishes when the browser stops. Buffers without bound, so
    /// iterate it (or ignore it, using `onEvent`).
    public let events: AsyncStream<Event>

    private let continuation: AsyncStream<Event>.Continuation
    private let onEvent: (@Sendable (Event) -> Void)?
    private let snapshot = NIOLockedValueBox<[String: MDNSService]>([:])
    let transport: any MDNSMessageTransport
    let logger: Logger

    // Everything below is touched on `eventLoop` only.
    var cache: MDNSCache
    var running = false
    var stopped = false
    var listenerID: MDNSListenerID?
    var queryTask: Scheduled<Void>?
    var queryInterval: TimeAmount
    var cacheTask: Scheduled<Void>?
    var cacheTaskDeadline: NIODeadline?
    var resolveTask: Scheduled<Void>?
    var resolveTaskDeadline: NIODeadline?
    /// Instances known by PTR but not fully: when to ask next, and how often we have.
    var resolving: [DNSName: (next: NIODeadline, attempts: Int)] = [:]
    /// What was last reported of each instance.
    var reported: [DNSName: MDNSService] = [:]
    /// Why records of an instance last left the cache, to say why it was removed.
    var lastRemoval: [DNSName: RemovalReason] = [:]
    var firstQueryAt: NIODeadline?
    var lastAnswerAt: NIODeadline?
    var enumerationCompleted = false
    var enumerationTask: Scheduled<Void>?

    /// A browser for `serviceType` on `transport`, not yet started.
    ///
    /// - Parameter onEvent: Called with every event on the event loop, before it is yielded to
    ///   ``events``.
    public convenience init(
        serviceType: DNSName = .batonService, transport: MDNSTransport, timing: Timing = Timing(),
        logger: Logger = Logger(label: "baton.mdns"), onEvent: (@Sendable (Event) -> Void)? = nil
    ) {
        self.init(
            serviceType: serviceType, messageTransport: transport, timing: timing, logger: logger, onEvent: onEvent)
    }

    /// As the public initializer, over any transport (the tests' in-memory one).
    package init(
        serviceType: DNSName = .batonService, messageTransport transport: any MDNSMessageTransport,
        timing: Timing = Timing(), logger: Logger = Logger(label: "baton.mdns"),
        onEvent: (@Sendable (Event) -> Void)? = nil
    ) {
        self.eventLoop = transport.eventLoop
        self.serviceType = serviceType
        self.transport = transport
        self.timing = timing
        self.logger = logger
        self.onEvent = onEvent
        self.cache = MDNSCache(
            capacity: timing.cacheCapacity, senderQuota: timing.cacheQuotaPerSender,
            serviceTypeQuota: timing.cacheQuotaPerServiceType, floodPenalty: timing.floodPenalty)
        self.queryInterval = timing.initialQueryInterval
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// The instances fully known now, by instance name; readable from any thread.
    public var services: [String: MDNSService] {
        snapshot.withLockedValue { $0 }
    }

    /// Starts browsing: the first query goes out before this returns on the loop. Starting
    /// again, or after stopping, does nothing.
    public func start() {
        eventLoop.execute { [self] in
            guard !running, !stopped else { return }
            running = true
            listenerID = transport.addListener { [weak self] event in self?.handle(event) }
            firstQueryAt = eventLoop.now
            sendQuery(on: nil)
            sendLegacyQuery()
            scheduleNextQuery(after: timing.initialQueryInterval)
            scheduleEnumerationCheck(at: eventLoop.now + timing.enumerationMinimum)
        }
    }

    /// Stops querying and listening, and finishes ``events``. No `removed` events are sent for
    /// the instances still known. Stopping again does nothing.
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.submit { [self] in
            guard !stopped else { return }
            stopped = true
            running = false
            for task in [queryTask, cacheTask, resolveTask, enumerationTask] { task?.cancel() }
            if let listenerID { transport.removeListener(listenerID) }
            listenerID = nil
            continuation.finish()
        }
    }

    // MARK: - Events

    func handle(_ event: MDNSTransportEvent) {
        guard running else { return }
        switch event {
        case .message(let received):
            let message = received.message
            // RFC 6762 §6 and §18: only responses from port 5353, with opcode and rcode 0.
            guard message.isResponse, message.opcode == 0, message.responseCode == 0,
                  received.sourcePort == 5353 else { return }
            handleResponse(received)
        case .interfaceAdded(let interface):
            // A new link: ask there now and start the schedule over (§5.2 network change).
            sendQuery(on: [interface.index])
            queryInterval = timing.initialQueryInterval
            scheduleNextQuery(after: queryInterval)
        case .interfaceChanged:
            break
        case .interfaceRemoved(let interface):
            for entry in cache.removeInterface(interface.index) {
                noteRemoval(of: entry, reason: .interfaceRemoved)
            }
            reconcile()
            rescheduleCacheTimer()
        }
    }

    /// Reports `event` to the handler and the stream.
    func report(_ event: Event) {
        logger.debug("mDNS: browse event", metadata: ["event": "\(event)"])
        onEvent?(event)
        continuation.yield(event)
    }

    /// Publishes changes of the reported instances to other threads: a service, or nil for one
    /// removed.
    func publish(_ changes: [(String, MDNSService?)]) {
        snapshot.withLockedValue { services in
            for (name, service) in changes { services[name] = service }
        }
    }

    // MARK: - Enumeration

    func scheduleEnumerationCheck(at deadline: NIODeadline) {
        enumerationTask = eventLoop.scheduleTask(deadline: deadline) { [self] in checkEnumeration() }
    }

    /// Completes enumeration once the minimum is over, answers have stopped coming for the quiet
    /// period and nothing is half-resolved; or at the maximum regardless.
    private func checkEnumeration() {
        guard !enumerationCompleted, let firstQueryAt else { return }
        let now = eventLoop.now
        let latest = firstQueryAt + timing.enumerationMaximum
        let quiet = lastAnswerAt.map { now - $0 >= timing.enumerationQuietPeriod } ?? true
        if now >= latest || (quiet && resolving.isEmpty) {
            enumerationCompleted = true
            report(.enumerationCompleted)
            return
        }
        var next = now + .milliseconds(50)
        if let lastAnswerAt, !quiet { next = max(next, lastAnswerAt + timing.enumerationQuietPeriod) }
        scheduleEnumerationCheck(at: min(next, latest))
    }
}
