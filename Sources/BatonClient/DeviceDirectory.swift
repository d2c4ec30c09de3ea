import BatonCore
import BatonDiscovery
import BatonNet
import BatonSecurity
import Logging
import NIOCore

/// Every device this process knows of, one entry per device id, merged from mDNS and static
/// peers; watchers see it through their filters as added, updated and removed events.
///
/// Liveness: every device is asked to Describe itself every `liveness / 3`; one that does not
/// answer turns `unavailable` (so watchers of available devices see it removed within
/// `liveness`), and turns `available` again when it answers. A device that says goodbye or
/// whose mDNS records expire, and that no static peer names, is removed outright.
///
/// Confined to its client's event loop: call everything there.
public final class DeviceDirectory: @unchecked Sendable {
    /// What a watcher hears.
    public enum Event: Sendable, Equatable {
        case added(RemoteDevice)
        case updated(RemoteDevice)
        case removed(RemoteDevice)
        /// The first query window is over, and every static peer has answered or failed once.
        case enumerationCompleted
        /// Something went wrong that the watcher may want to show (a peer that cannot be
        /// reached, a socket that cannot be opened); the directory carries on.
        case error(String)
    }

    /// How the directory finds devices.
    public struct Options: Sendable {
        /// `host:port` peers polled with Describe (networks without multicast).
        public var peers: [DeviceAddress] = []
        /// How long a device may stay silent before it is reported gone.
        public var liveness: TimeAmount = .seconds(30)
        /// This device's account fingerprint, for `same_account` filters.
        public var account = ""
        /// How to browse mDNS for `_baton._tcp`; nil for static peers alone.
        public var mdns: MDNSTransport.Configuration? = MDNSTransport.Configuration()
        /// The browser's query schedule and enumeration window.
        public var mdnsTiming = MDNSBrowser.Timing()
        public init() {}
    }

    /// A watcher's registration; ``DeviceDirectory/unwatch(_:)`` ends it.
    public struct Watch: Hashable, Sendable {
        let id: Int
    }

    public let client: BatonClient
    public let options: Options
    let logger: Logger
    var eventLoop: any EventLoop { client.eventLoop }

    /// Known devices by id.
    private(set) var entries: [String: Entry] = [:]
    private var watchers: [Int: Watcher] = [:]
    private var nextWatch = 0
    private var livenessTask: RepeatedTask?
    /// Sources that have not finished their first enumeration yet.
    private var pendingEnumeration: Set<String> = []
    /// Whether enumeration is over.
    public private(set) var enumerated = false
    var started = false
    /// The mDNS browser and its sockets, once started.
    var mdnsTransport: MDNSTransport?
    var mdnsBrowser: MDNSBrowser?

    struct Entry {
        var device: RemoteDevice
        /// mDNS instance names that advertise this device.
        var instances: Set<String> = []
        /// Static peers that answered as this device.
        var peers: Set<DeviceAddress> = []
    }

    private struct Watcher {
        var filter: DeviceFilter
        var handler: (Event) -> Void
        /// Devices this watcher was told of, as it was told.
        var shown: [String: RemoteDevice] = [:]
    }

    public init(client: BatonClient, options: Options = Options(), logger: Logger = Logger(label: "baton.directory")) {
        self.client = client
        self.options = options
        self.logger = logger
    }

    /// Devices that pass `filter`, sorted by name then id.
    public func devices(matching filter: DeviceFilter = DeviceFilter()) -> [RemoteDevice] {
        entries.values.map(\.device).filter { filter.matches($0, account: options.account) }
            .sorted { ($0.info.name, $0.info.id) < ($1.info.name, $1.info.id) }
    }

    /// Starts browsing mDNS (unless ``Options/mdns`` is nil), polling static peers and checking
    /// liveness; `sources` names any other sources that will call ``sourceEnumerated(_:)`` when
    /// their first window is over. Enumeration completes when every source's first window is.
    public func start(waitingFor sources: Set<String> = []) {
        eventLoop.preconditionInEventLoop()
        guard !started else { return }
        started = true
        pendingEnumeration = sources
        if options.mdns != nil { pendingEnumeration.insert(Self.mdnsSource) }
        for peer in options.peers { pendingEnumeration.insert("peer \(peer)") }
        if pendingEnumeration.isEmpty { finishEnumeration() }
        if let configuration = options.mdns { startMDNS(configuration) }
        for peer in options.peers { poll(peer: peer, first: true) }
        let interval = TimeAmount.nanoseconds(max(options.liveness.nanoseconds / 3, 100_000_000))
        livenessTask = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            self?.checkLiveness()
        }
    }

    /// Stops browsing and checking; watchers hear nothing more. The future completes once the
    /// mDNS sockets are closed.
    @discardableResult
    public func stop() -> EventLoopFuture<Void> {
        livenessTask?.cancel()
        livenessTask = nil
        watchers = [:]
        return stopMDNS()
    }

    /// Registers `handler` for the devices `filter` passes. It hears `added` at once for each
    /// device already known, and `enumerationCompleted` if enumeration is already over.
    public func watch(_ filter: DeviceFilter, _ handler: @escaping (Event) -> Void) -> Watch {
        eventLoop.preconditionInEventLoop()
        let id = nextWatch
        nextWatch += 1
        watchers[id] = Watcher(filter: filter, handler: handler)
        for device in devices(matching: filter) {
            watchers[id]?.shown[device.info.id] = device
            handler(.added(device))
        }
        if enumerated { handler(.enumerationCompleted) }
        return Watch(id: id)
    }

    /// Ends a watch; its handler is not called again.
    public func unwatch(_ watch: Watch) {
        watchers[watch.id] = nil
    }

    /// What a lookup by name or id settles on.
    public enum Lookup: Sendable, Equatable {
        case found(RemoteDevice)
        case notFound
        /// Several devices share the name: their ids.
        case ambiguous([String])
    }

    /// The device `nameOrID` names among those known now: an id matches at once; a name only
    /// once enumeration is over, so a second device of the same name is not missed. Nil while
    /// it may still turn up. Only devices `filter` passes count.
    public func match(_ nameOrID: String, among filter: DeviceFilter = DeviceFilter()) -> Lookup? {
        let all = devices(matching: filter)
        if let byID = all.first(where: { $0.info.id == nameOrID }) { return .found(byID) }
        guard enumerated else { return nil }
        let named = all.filter { $0.info.name == nameOrID }
        switch named.count {
        case 0: return nil
        case 1: return .found(named[0])
        default: return .ambiguous(named.map(\.info.id))
        }
    }

    /// Waits until ``match(_:among:)`` settles on `nameOrID` among the devices `filter`
    /// passes, or `timeout` passes (`notFound`).
    public func find(_ nameOrID: String, among filter: DeviceFilter = DeviceFilter(), timeout: TimeAmount) -> EventLoopFuture<Lookup> {
        eventLoop.preconditionInEventLoop()
        let promise = eventLoop.makePromise(of: Lookup.self)
        if let now = match(nameOrID, among: filter) {
            promise.succeed(now)
            return promise.futureResult
        }
        var watch: Watch?
        var settled = false
        let settle = { [self] (result: Lookup) in
            guard !settled else { return }
            settled = true
            if let watch { unwatch(watch) }
            promise.succeed(result)
        }
        watch = self.watch(filter) { [self] _ in
            if let now = match(nameOrID, among: filter) { settle(now) }
        }
        let onTimeout = NIOLoopBound(settle, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: timeout) { onTimeout.value(.notFound) }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    // MARK: sources

    /// An mDNS instance advertising device `device` (found or changed).
    public func mdnsAdvertised(instance: String, device: RemoteDevice) {
        // The same instance may have moved to another id (a new device took the name).
        for (id, entry) in entries where entry.instances.contains(instance) && id != device.info.id {
            dropSource(id: id) { $0.instances.remove(instance) }
        }
        var entry = entries[device.info.id] ?? Entry(device: device)
        entry.instances.insert(instance)
        var merged = device
        merged.sources = entry.device.sources.union([.mdns])
        if !entry.peers.isEmpty {
            // A static peer's address stays reachable too.
            for peer in entry.peers.sorted(by: { $0.description < $1.description }) where !merged.endpoints.contains(peer) {
                merged.endpoints.append(peer)
            }
        }
        // A fresh advertisement means the agent is there.
        merged.status = .available
        entry.device = merged
        store(entry)
    }

    /// An mDNS instance said goodbye or expired.
    public func mdnsWithdrawn(instance: String) {
        for (id, entry) in entries where entry.instances.contains(instance) {
            dropSource(id: id) { $0.instances.remove(instance) }
        }
    }

    /// A source named at ``start(waitingFor:)`` finished its first window.
    public func sourceEnumerated(_ source: String) {
        guard pendingEnumeration.remove(source) != nil, pendingEnumeration.isEmpty else { return }
        finishEnumeration()
    }

    /// Tells every watcher of a problem.
    public func report(_ problem: String) {
        broadcast(.error(problem))
    }

    // MARK: bookkeeping

    private func finishEnumeration() {
        guard !enumerated else { return }
        enumerated = true
        broadcast(.enumerationCompleted)
    }

    private func broadcast(_ event: Event) {
        for (_, watcher) in watchers { watcher.handler(event) }
    }

    /// Removes a source from a device's entry; the device goes when it has none left.
    private func dropSource(id: String, _ change: (inout Entry) -> Void) {
        guard var entry = entries[id] else { return }
        change(&entry)
        if entry.instances.isEmpty { entry.device.sources.remove(.mdns) }
        if entry.peers.isEmpty { entry.device.sources.remove(.peer) }
        if entry.instances.isEmpty && entry.peers.isEmpty {
            entries[id] = nil
            tellWatchers(id: id, now: nil)
        } else {
            store(entry)
        }
    }

    private func store(_ entry: Entry) {
        entries[entry.device.info.id] = entry
        // Whoever answers at these addresses must prove to be this device, of its account.
        let expectation = PeerExpectation(deviceID: entry.device.info.id, account: accountExpectation(entry.device.account))
        for endpoint in entry.device.endpoints { client.expect(expectation, at: endpoint) }
        tellWatchers(id: entry.device.info.id, now: entry.device)
    }

    /// Tells each watcher what changed for device `id` as its filter sees it.
    private func tellWatchers(id: String, now device: RemoteDevice?) {
        for key in watchers.keys.sorted() {
            guard var watcher = watchers[key] else { continue }
            let before = watcher.shown[id]
            let visible = device.flatMap { watcher.filter.matches($0, account: options.account) ? $0 : nil }
            let event: Event?
            switch (before, visible) {
            case (nil, let now?): event = .added(now)
            case (let was?, nil): event = .removed(device ?? was)
            case (let was?, let now?) where was != now: event = .updated(now)
            default: event = nil
            }
            watcher.shown[id] = visible
            watchers[key] = watcher
            if let event { watcher.handler(event) }
        }
    }

    /// What a device advertising `account` must prove: this device's account when it is the
    /// same (or not advertised), else exactly the advertised one.
    private func accountExpectation(_ account: String) -> AgentExpectation {
        guard !account.isEmpty, account != options.account, let fingerprint = AccountFingerprint(hex: account) else { return .ownAccount }
        return .account(fingerprint)
    }

    // MARK: static peers and liveness

    private func poll(peer: DeviceAddress, first: Bool) {
        client.describe(peer).whenComplete { [self] result in
            switch result {
            case .success(let (info, _)):
                // The entry this peer answered for before, if the device behind it changed.
                for (id, entry) in entries where entry.peers.contains(peer) && id != info.id {
                    dropSource(id: id) { $0.peers.remove(peer) }
                }
                var entry = entries[info.id] ?? Entry(device: RemoteDevice(info: info, endpoints: []))
                entry.peers.insert(peer)
                var device = entry.device
                device.info = entry.instances.isEmpty ? info : device.info
                // The agent proved to be of this account in the handshake.
                device.account = options.account
                if !device.endpoints.contains(peer) { device.endpoints.append(peer) }
                device.sources.insert(.peer)
                device.status = .available
                entry.device = device
                store(entry)
            case .failure(let error):
                if first { report("peer \(peer) cannot be reached: \(error)") }
                markUnavailable { $0.peers.contains(peer) }
            }
            if first { sourceEnumerated("peer \(peer)") }
        }
    }

    private func checkLiveness() {
        for peer in options.peers { poll(peer: peer, first: false) }
        // mDNS devices not also reached as static peers (polling covers those).
        for (id, entry) in entries where entry.peers.isEmpty {
            guard let endpoint = entry.device.endpoints.first else { continue }
            client.describe(endpoint).whenComplete { [self] result in
                switch result {
                case .success:
                    guard var entry = entries[id], entry.device.status != .available else { return }
                    entry.device.status = .available
                    store(entry)
                case .failure:
                    markUnavailable { $0.device.info.id == id }
                }
            }
        }
    }

    private func markUnavailable(_ which: (Entry) -> Bool) {
        for (_, entry) in entries where which(entry) && entry.device.status != .unavailable {
            var changed = entry
            changed.device.status = .unavailable
            store(changed)
        }
    }
}
