import BatonCore
import BatonDiscovery
import NIOCore

extension MDNSDeviceSource {
    /// How far a watcher goes probing what mDNS says (which anyone on the link can say): how
    /// many connections a stranger's advertisements can make it open, and where.
    ///
    /// With the defaults, a flood of fake devices aimed at one host costs at most 8 failed
    /// connections to it every 5 minutes, and at most 32 a minute overall whatever the number
    /// of hosts; a device that answered once is probed every round as before.
    public struct ProbeLimits: Sendable {
        /// Probes under way at once, all hosts together; never more than one per host.
        public var concurrentProbes = 4
        /// Failed probes at one endpoint (host and port) of devices that never answered, after
        /// which sightings there are given up on: lost, and ignored for ``ignoreDuration``.
        public var failuresPerEndpoint = 3
        /// Failed probes at one host of devices that never answered, within
        /// ``ignoreDuration``, after which every such sighting at that host is given up on.
        public var failuresPerHost = 8
        /// Failed probes of devices that never answered in any one minute; once reached, such
        /// devices wait for their probe (they stay as they are) until the minute has passed.
        public var failuresPerMinute = 32
        /// How long a sighting given up on is ignored, and a host's failures remembered.
        public var ignoreDuration: TimeAmount = .minutes(5)

        public init() {}
    }

    /// The probes' bookkeeping, on the source's loop. Every collection is bounded: by the
    /// instances seen (themselves bounded by the mDNS cache), or by the failures the limits
    /// allow in ``ProbeLimits/ignoreDuration``.
    struct ProbeState {
        /// Instances that answered a probe at the endpoints they advertise now.
        var proven = Set<String>()
        /// Instances waiting for a probe, in order, and the same as a set.
        var queue: [String] = []
        var queued = Set<String>()
        /// The host each probe under way connects to, by instance.
        var inFlight: [String: String] = [:]
        var busyHosts = Set<String>()
        /// Failures of never-answered devices by endpoint (`host:port`) and by host, since when.
        var endpointFailures: [String: (count: Int, since: NIODeadline)] = [:]
        var hostFailures: [String: (count: Int, since: NIODeadline)] = [:]
        /// When the failures of the last minute happened (at most ``ProbeLimits/failuresPerMinute``).
        var recentFailures: [NIODeadline] = []
        /// Endpoints and hosts given up on, until when.
        var ignoredEndpoints: [String: NIODeadline] = [:]
        var ignoredHosts: [String: NIODeadline] = [:]
        /// Probes started so far.
        var started = 0
        /// When each instance's last probe started (instances seen only).
        var lastStarted: [String: NIODeadline] = [:]
        /// Whether ``startProbes()`` is running (a probe that completes at once calls it again),
        /// and whether it should look again when done.
        var starting = false
        var startAgain = false
    }

    /// Whether the sighting of `instance` as `device` is one given up on: its endpoint or host
    /// is ignored, and it has not answered there.
    func isIgnored(_ instance: String, at device: RemoteDevice) -> Bool {
        guard let endpoint = device.endpoints.first else { return false }
        if probing.proven.contains(instance), seen[instance]?.endpoints == device.endpoints { return false }
        let now = eventLoop.now
        if let until = probing.ignoredEndpoints[endpoint.description], until > now { return true }
        if let until = probing.ignoredHosts[endpoint.host], until > now { return true }
        return false
    }

    /// One liveness round: every device seen whose check is due waits for a probe (those that
    /// answered before at the front, so that a stranger's devices never delay a real one's),
    /// then as many start as the limits allow. A check is due `liveness / 3` after the last;
    /// for a device that answered before and is `unavailable` now, at once.
    func checkLiveness() {
        forgetExpired()
        let now = eventLoop.now
        // Rounds come a little late or early: a check a tenth of an interval early is on time.
        let due = probeInterval - .nanoseconds(probeInterval.nanoseconds / 10)
        let waiting = seen.keys.filter { instance in
            guard !probing.queued.contains(instance), probing.inFlight[instance] == nil else { return false }
            if probing.proven.contains(instance), seen[instance]?.status == .unavailable { return true }
            return probing.lastStarted[instance].map { now - $0 >= due } ?? true
        }
        let proven = waiting.filter { probing.proven.contains($0) }.sorted()
        let unproven = waiting.filter { !probing.proven.contains($0) }.sorted()
        probing.queue.insert(contentsOf: proven, at: 0)
        probing.queue.append(contentsOf: unproven)
        probing.queued.formUnion(waiting)
        startProbes()
    }

    /// Starts waiting probes while fewer than ``ProbeLimits/concurrentProbes`` are under way,
    /// one per host, never-answered devices only while the minute's failures allow.
    private func startProbes() {
        guard !probing.starting else {
            probing.startAgain = true
            return
        }
        probing.starting = true
        defer { probing.starting = false }
        repeat {
            probing.startAgain = false
            startWaitingProbes()
        } while probing.startAgain
    }

    private func startWaitingProbes() {
        var index = 0
        while probing.inFlight.count < limits.concurrentProbes, index < probing.queue.count {
            let instance = probing.queue[index]
            guard let device = seen[instance], let endpoint = device.endpoints.first else {
                probing.queue.remove(at: index)
                probing.queued.remove(instance)
                continue
            }
            let proven = probing.proven.contains(instance)
            if !proven, isIgnored(instance, at: device) {
                probing.queue.remove(at: index)
                probing.queued.remove(instance)
                lose(instance)
                continue
            }
            if probing.busyHosts.contains(endpoint.host) || (!proven && failuresSpent()) {
                index += 1
                continue
            }
            probing.queue.remove(at: index)
            probing.queued.remove(instance)
            probing.inFlight[instance] = endpoint.host
            probing.busyHosts.insert(endpoint.host)
            probing.started += 1
            probing.lastStarted[instance] = eventLoop.now
            probe(device).hop(to: eventLoop).whenComplete { [self] result in
                finish(instance, device, endpoint, succeeded: result.isSuccess)
            }
        }
    }

    /// A probe's outcome: an answer proves the device at its endpoints; a failure of one never
    /// proven counts against its endpoint and host (and may give up on it); the status seen
    /// follows either way.
    private func finish(
        _ instance: String, _ device: RemoteDevice, _ endpoint: RemoteDevice.Endpoint, succeeded: Bool
    ) {
        probing.inFlight[instance] = nil
        probing.busyHosts.remove(endpoint.host)
        defer { startProbes() }
        guard !stopped else { return }
        let current = seen[instance]
        let same = current?.info.id == device.info.id && current?.endpoints == device.endpoints
        if succeeded {
            if same { probing.proven.insert(instance) }
            probing.endpointFailures[endpoint.description] = nil
        } else if !(same && probing.proven.contains(instance)) {
            noteFailure(at: endpoint)
            if !same { return }
            if isIgnored(instance, at: device) {
                giveUp(at: endpoint)
                return
            }
        }
        guard same, var now = current else { return }
        let status: DeviceStatus = succeeded ? .available : .unavailable
        guard now.status != status else { return }
        now.status = status
        seen[instance] = now
        directory?.source(self, sees: now, as: instance)
    }

    /// Whether the failures of the last minute have reached the limit.
    private func failuresSpent() -> Bool {
        let now = eventLoop.now
        probing.recentFailures.removeAll { now - $0 >= .minutes(1) }
        return probing.recentFailures.count >= limits.failuresPerMinute
    }

    /// Counts a failed probe of a never-answered device at `endpoint`, ignoring the endpoint or
    /// its host once they reach their limits (logged once each time).
    private func noteFailure(at endpoint: RemoteDevice.Endpoint) {
        let now = eventLoop.now
        probing.recentFailures.append(now)
        if probing.recentFailures.count > limits.failuresPerMinute { probing.recentFailures.removeFirst() }
        func count(_ failures: inout [String: (count: Int, since: NIODeadline)], _ key: String) -> Int {
            var entry = failures[key] ?? (0, now)
            if now - entry.since >= limits.ignoreDuration { entry = (0, now) }
            entry.count += 1
            failures[key] = entry
            return entry.count
        }
        if count(&probing.endpointFailures, endpoint.description) >= limits.failuresPerEndpoint,
           probing.ignoredEndpoints[endpoint.description].map({ $0 <= now }) ?? true {
            probing.ignoredEndpoints[endpoint.description] = now + limits.ignoreDuration
            logger.info(
                "mDNS: a device advertised there never answered; ignoring that endpoint for a while",
                metadata: ["endpoint": "\(endpoint)", "for": "\(limits.ignoreDuration)"])
        }
        if count(&probing.hostFailures, endpoint.host) >= limits.failuresPerHost,
           probing.ignoredHosts[endpoint.host].map({ $0 <= now }) ?? true {
            probing.ignoredHosts[endpoint.host] = now + limits.ignoreDuration
            logger.warning(
                "mDNS: devices advertised at this host never answered; ignoring the host's new devices for a while",
                metadata: ["host": "\(endpoint.host)", "for": "\(limits.ignoreDuration)"])
        }
    }

    /// Loses every never-answered device whose sighting is now ignored at `endpoint`'s host.
    private func giveUp(at endpoint: RemoteDevice.Endpoint) {
        let doomed = seen.filter { instance, device in
            device.endpoints.first?.host == endpoint.host && isIgnored(instance, at: device)
        }
        for instance in doomed.keys { lose(instance) }
    }

    /// Forgets failures and ignores whose time is over, and takes another look at what the
    /// browser still knows that was ignored.
    private func forgetExpired() {
        let now = eventLoop.now
        let before = probing.ignoredEndpoints.count + probing.ignoredHosts.count
        probing.ignoredEndpoints = probing.ignoredEndpoints.filter { $0.value > now }
        probing.ignoredHosts = probing.ignoredHosts.filter { $0.value > now }
        probing.endpointFailures = probing.endpointFailures.filter { now - $0.value.since < limits.ignoreDuration }
        probing.hostFailures = probing.hostFailures.filter { now - $0.value.since < limits.ignoreDuration }
        guard probing.ignoredEndpoints.count + probing.ignoredHosts.count < before, let browser else { return }
        for (name, service) in browser.services where seen[name] == nil {
            handle(.added(service))
        }
    }
}
