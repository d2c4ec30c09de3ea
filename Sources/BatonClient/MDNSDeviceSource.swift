import BatonCore
import BatonDiscovery
import Logging
import NIOCore

/// Devices advertised over mDNS/DNS-SD as `_baton._tcp` instances. An instance that says
/// goodbye or whose records expire is lost. Liveness: every device found is asked to describe
/// itself every `liveness / 3`, each check with a deadline of its own (`2 × liveness / 3`, see
/// ``probeTimeout(liveness:status:)``), so that one that vanishes without a goodbye is seen
/// `unavailable` within `liveness`. A device that answered before and stopped is asked again
/// every half second or so (afresh: its connection closed), so that it is `available` again
/// about a second after it is back.
///
/// What mDNS says is anyone's to say, so probes are bounded (see ``ProbeLimits``): a few at
/// once, one at a time per host, and a device that never answered is given up on after a few
/// failures at its endpoint (or at its host, or when failures come too fast overall): it is
/// lost and its sighting ignored for a while. A device that answered once is not given up on
/// that way (it is `unavailable` until mDNS says it is gone).
public final class MDNSDeviceSource: DeviceSource, @unchecked Sendable {
    public let name = "mdns"
    let eventLoop: any EventLoop
    private let configuration: MDNSTransport.Configuration
    private let timing: MDNSBrowser.Timing
    private let liveness: TimeAmount
    let probe: (RemoteDevice) -> EventLoopFuture<Void>
    let limits: ProbeLimits
    let logger: Logger
    private(set) weak var directory: (any DeviceSourceDelegate)?
    private var transport: MDNSTransport?
    private(set) var browser: MDNSBrowser?
    private var livenessTask: RepeatedTask?
    var stopped = false
    /// What each instance advertises, as last seen.
    var seen: [String: RemoteDevice] = [:]
    /// The probes' bookkeeping; see ``MDNSDeviceSource+Probing``.
    var probing = ProbeState()

    /// A source browsing with `configuration` and `timing`, checking liveness every
    /// `liveness / 3` with `probe` (which fails when the device does not answer), within
    /// `limits`.
    public init(
        on eventLoop: any EventLoop, configuration: MDNSTransport.Configuration = MDNSTransport.Configuration(),
        timing: MDNSBrowser.Timing = MDNSBrowser.Timing(), liveness: TimeAmount,
        probe: @escaping (RemoteDevice) -> EventLoopFuture<Void>, logger: Logger,
        limits: ProbeLimits = ProbeLimits()
    ) {
        self.limits = limits
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.timing = timing
        self.liveness = liveness
        self.probe = probe
        self.logger = logger
    }

    /// Opens the mDNS sockets and browses. Sockets that cannot be opened are a problem
    /// reported, and enumeration goes on without mDNS.
    public func start(reportingTo directory: any DeviceSourceDelegate) {
        attach(directory)
        MDNSTransport.start(configuration: configuration, on: eventLoop, logger: logger).whenComplete { [self] result in
            switch result {
            case .success(let transport):
                guard !stopped else {
                    _ = transport.close()
                    return
                }
                self.transport = transport
                let browser = MDNSBrowser(transport: transport, timing: timing, logger: logger) { [self] event in
                    eventLoop.assertInEventLoop()
                    handle(event)
                }
                self.browser = browser
                browser.start()
            case .failure(let error):
                logger.error("mDNS unavailable", metadata: ["error": "\(error)"])
                self.directory?.source(self, problem: "mDNS cannot be used: \(error)")
                self.directory?.sourceEnumerated(self)
            }
        }
        let tick = TimeAmount.nanoseconds(max(min(liveness.nanoseconds / 3, Self.unavailableInterval.nanoseconds), 100_000_000))
        livenessTask = eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { [weak self] _ in
            self?.checkLiveness()
        }
    }

    public func stop() -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        stopped = true
        directory = nil
        livenessTask?.cancel()
        livenessTask = nil
        let (browser, transport) = (self.browser, self.transport)
        self.browser = nil
        self.transport = nil
        guard let browser, let transport else { return eventLoop.makeSucceededVoidFuture() }
        return browser.stop().flatMap { transport.close() }
    }

    /// Reports to `directory` from now on (``start(reportingTo:)`` does; tests feed events
    /// without a transport).
    func attach(_ directory: any DeviceSourceDelegate) {
        eventLoop.preconditionInEventLoop()
        self.directory = directory
    }

    func handle(_ event: MDNSBrowser.Event) {
        switch event {
        case .added(let service), .updated(let service):
            guard let device = DeviceAdvertisement.device(from: service) else {
                // Some other software's `_baton._tcp` instance, or an agent whose TXT is not in.
                logger.debug("mDNS instance without a device id", metadata: ["instance": "\(service.instanceName)"])
                lose(service.instanceName)
                return
            }
            guard !isIgnored(service.instanceName, at: device) else {
                lose(service.instanceName)
                return
            }
            if seen[service.instanceName]?.endpoints != device.endpoints {
                // Somewhere else now: what was proven there proves nothing here.
                probing.proven.remove(service.instanceName)
            }
            // A fresh advertisement means the agent is there: its first check is due a round
            // from now, as if it had just answered one.
            if seen[service.instanceName] == nil { probing.lastStarted[service.instanceName] = eventLoop.now }
            seen[service.instanceName] = device
            directory?.source(self, sees: device, as: service.instanceName)
        case .removed(let instance, let reason):
            logger.debug("mDNS instance gone", metadata: ["instance": "\(instance)", "reason": "\(reason)"])
            lose(instance)
        case .enumerationCompleted:
            directory?.sourceEnumerated(self)
        }
    }

    /// Between checks of a device that answered before and stopped.
    static let unavailableInterval = TimeAmount.milliseconds(500)

    /// Between checks of a device: `liveness / 3` (at least 100 ms).
    var probeInterval: TimeAmount { .nanoseconds(max(liveness.nanoseconds / 3, 100_000_000)) }

    /// How long one check of a device may wait for its answer: two thirds of `liveness` (at
    /// least 200 ms), so that checks every `liveness / 3` see a device that vanished within
    /// `liveness`; at most a second for a device already `unavailable`, asked again often.
    public static func probeTimeout(liveness: TimeAmount, status: DeviceStatus) -> TimeAmount {
        let timeout = TimeAmount.nanoseconds(max(liveness.nanoseconds * 2 / 3, 200_000_000))
        return status == .available ? timeout : min(timeout, .seconds(1))
    }

    func lose(_ instance: String) {
        probing.proven.remove(instance)
        probing.lastStarted[instance] = nil
        guard seen.removeValue(forKey: instance) != nil else { return }
        directory?.source(self, lost: instance)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
