import BatonCore
import BatonDiscovery
import BatonNet
import BatonSecurity
import Logging
import NIOCore

/// Every device this process knows of, one entry per device id, merged from every
/// ``DeviceSource`` (mDNS, static peers, ...); watchers see it through their filters as added,
/// updated and removed events.
///
/// A device is what its sources see of it together: its routes are every route they know,
/// its details are its own advertisement's (mDNS) before what a peer describes, and it is
/// `available` while any source sees it so; then only the sources that see it available count
/// (their routes, `local` if one of them is). It is removed when no source sees it any more.
///
/// Confined to its client's event loop: call everything there.
public final class DeviceDirectory: @unchecked Sendable {
    /// What a watcher hears.
    public enum Event: Sendable, Equatable {
        case added(RemoteDevice)
        case updated(RemoteDevice)
        case removed(RemoteDevice)
        /// Every source's first look is over.
        case enumerationCompleted
        /// Something went wrong that the watcher may want to show (a peer that cannot be
        /// reached, a socket that cannot be opened); the directory carries on.
        case error(String)
    }

    /// The standard sources.
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
        /// More sources (a broker's presence), made for the directory's client, after mDNS and
        /// the peers.
        public var moreSources: @Sendable (BatonClient) -> [any DeviceSource] = { _ in [] }
        public init() {}
    }

    /// A watcher's registration; ``DeviceDirectory/unwatch(_:)`` ends it.
    public struct Watch: Hashable, Sendable {
        let id: Int
    }

    public let client: BatonClient
    /// This device's account fingerprint, for `same_account` filters.
    public let account: String
    let logger: Logger
    var eventLoop: any EventLoop { client.eventLoop }
    private let sources: [any DeviceSource]

    /// Known devices by id.
    private var entries: [String: Entry] = [:]
    /// Sightings already logged for claiming an account their id does not belong to.
    private var refusedClaims: Set<String> = []
    /// The pins of devices met before, when connections use TLS.
    var known: KnownDevices? { client.options.security.trustStore?.known }
    /// Where devices were last reached, when connections use TLS (a route proves nothing
    /// without a handshake).
    let routes: DeviceRoutes?
    /// Which device each source's key stands for.
    private var sighted: [SightingKey: String] = [:]
    private var watchers: [Int: Watcher] = [:]
    private var nextWatch = 0
    /// Sources that have not finished their first look yet.
    private var pendingEnumeration: Set<ObjectIdentifier> = []
    /// Whether enumeration is over.
    public private(set) var enumerated = false
    private var started = false

    /// Who saw a device: a source, and its key for what it saw.
    private struct SightingKey: Hashable {
        let source: ObjectIdentifier
        let key: String
    }

    private struct Entry {
        /// What each source saw, in the order the sources were given.
        var sightings: [(key: SightingKey, rank: Int, device: RemoteDevice)] = []

        /// The account sightings of this id must claim to count: the one a handshake pinned,
        /// else this device's own if any sighting claims it, else the first claim heard. A
        /// source's claim is a hint: two claims are never merged into one device.
        func account(own: String, pinned: String?) -> String? {
            if let pinned { return pinned }
            let claims = sightings.map(\.device.account)
            if claims.contains(own) { return own }
            return claims.first
        }

        /// The sightings that claim `account` together: those that see it available, when
        /// any does (else all of them).
        func device(claiming account: String?) -> RemoteDevice? {
            let claiming = sightings.filter { $0.device.account == account }
            // A device that left the LAN but is still reached through the broker is the
            // broker's now (`cloud`, its route alone): a sighting that no longer answers (mDNS
            // keeps its records for minutes) adds neither a dead route nor `local`, so the move
            // is an update both ways, never a removal.
            let available = claiming.filter { $0.device.status == .available }
            let ordered = (available.isEmpty ? claiming : available).sorted { $0.rank < $1.rank }
            guard var merged = ordered.first?.device else { return nil }
            for (_, _, device) in ordered.dropFirst() {
                for route in device.routes where !merged.routes.contains(route) { merged.routes.append(route) }
                for endpoint in device.directCandidates where !merged.directCandidates.contains(endpoint) {
                    merged.directCandidates.append(endpoint)
                }
                merged.sources.formUnion(device.sources)
                if device.transport == .local { merged.transport = .local }
            }
            return merged
        }
    }

    private struct Watcher {
        var filter: DeviceFilter
        var handler: (Event) -> Void
        /// Devices this watcher was told of, as it was told.
        var shown: [String: RemoteDevice] = [:]
    }

    /// A directory fed by `sources`, earlier ones first when they describe a device differently.
    public init(client: BatonClient, sources: [any DeviceSource], account: String, logger: Logger = Logger(label: "baton.directory")) {
        self.client = client
        self.sources = sources
        self.account = account
        self.logger = logger
        routes = client.options.security.trustStore.map { DeviceRoutes(folder: $0.folder) }
    }

    /// A directory fed by the standard sources `options` names: mDNS (unless nil), then each
    /// static peer, then ``Options/moreSources``; liveness checked by asking devices to describe themselves.
    public convenience init(client: BatonClient, options: Options = Options(), logger: Logger = Logger(label: "baton.directory")) {
        let loop = client.eventLoop
        var sources: [any DeviceSource] = []
        let account = options.account
        // A check has a deadline of its own, within the liveness window (see MDNSDeviceSource).
        let liveness = options.liveness
        if let mdns = options.mdns {
            sources.append(MDNSDeviceSource(
                on: loop, configuration: mdns, timing: options.mdnsTiming, liveness: liveness,
                probe: { device in
                    let timeout = MDNSDeviceSource.probeTimeout(liveness: liveness, status: device.status)
                    return client.probe(DeviceTarget(device, ownAccount: account), timeout: timeout).map { _ in }
                }, logger: logger))
        }
        for peer in options.peers {
            sources.append(PeerDeviceSource(peer, on: loop, liveness: liveness, account: account) { address in
                client.probe(DeviceTarget(address), timeout: MDNSDeviceSource.probeTimeout(liveness: liveness, status: .available))
            })
        }
        sources += options.moreSources(client)
        self.init(client: client, sources: sources, account: account, logger: logger)
    }

    /// Devices that pass `filter`, sorted by name then id.
    public func devices(matching filter: DeviceFilter = DeviceFilter()) -> [RemoteDevice] {
        eventLoop.preconditionInEventLoop()
        return entries.keys.compactMap(merged(id:)).filter { filter.matches($0, account: account) }
            .sorted { ($0.info.name, $0.info.id) < ($1.info.name, $1.info.id) }
    }

    /// The device with `id`, if known.
    public func device(id: String) -> RemoteDevice? {
        eventLoop.preconditionInEventLoop()
        return merged(id: id) ?? entries.keys.first { $0.lowercased() == id.lowercased() }.flatMap(merged(id:))
    }

    /// How to reach `device` now: its id and every route the sources know.
    public func target(for device: RemoteDevice) -> DeviceTarget {
        DeviceTarget(self.device(id: device.info.id) ?? device, ownAccount: account)
    }

    /// Starts every source. Enumeration completes when every source's first look is over.
    public func start() {
        eventLoop.preconditionInEventLoop()
        guard !started else { return }
        started = true
        pendingEnumeration = Set(sources.map(ObjectIdentifier.init))
        if pendingEnumeration.isEmpty { finishEnumeration() }
        for source in sources { source.start(reportingTo: self) }
    }

    /// Stops every source; watchers hear nothing more. The future completes once the sources
    /// have stopped (their sockets closed).
    @discardableResult
    public func stop() -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        watchers = [:]
        return .andAllComplete(sources.map { $0.stop() }, on: eventLoop)
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
        eventLoop.preconditionInEventLoop()
        watchers[watch.id] = nil
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

    /// Drops a sighting; the device goes when no source sees it any more.
    private func drop(_ key: SightingKey) {
        guard let id = sighted.removeValue(forKey: key), var entry = entries[id] else { return }
        entry.sightings.removeAll { $0.key == key }
        entries[id] = entry.sightings.isEmpty ? nil : entry
        tellWatchers(id: id, now: merged(id: id))
    }

    /// Device `id` as the sightings that claim its rightful account show it; the others are
    /// logged once each and left out.
    private func merged(id: String) -> RemoteDevice? {
        guard let entry = entries[id] else { return nil }
        let pinned = known?.pin(for: id)?.account.hex
        let rightful = entry.account(own: account, pinned: pinned)
        for sighting in entry.sightings where sighting.device.account != rightful {
            let claim = "\(id) \(sighting.key.key) \(sighting.device.account)"
            if refusedClaims.count >= 1_024 { refusedClaims.removeAll() } // a flood is logged again, never hoarded
            guard refusedClaims.insert(claim).inserted else { continue }
            logger.warning("a source claims a device for another account than its own: ignored", metadata: [
                "device": "\(id)", "seen as": "\(sighting.key.key)", "claimed account": "\(sighting.device.account.prefix(16))",
                "account": "\((rightful ?? "").prefix(16))", "routes": "\(sighting.device.routes.map(\.description).joined(separator: " "))",
            ])
        }
        return entry.device(claiming: rightful)
    }

    /// Tells each watcher what changed for device `id` as its filter sees it.
    private func tellWatchers(id: String, now device: RemoteDevice?) {
        for key in watchers.keys.sorted() {
            guard var watcher = watchers[key] else { continue }
            let before = watcher.shown[id]
            let visible = device.flatMap { watcher.filter.matches($0, account: account) ? $0 : nil }
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
}

extension DeviceDirectory: DeviceSourceDelegate {
    public func source(_ source: any DeviceSource, sees device: RemoteDevice, as key: String) {
        eventLoop.preconditionInEventLoop()
        let sighting = SightingKey(source: ObjectIdentifier(source), key: key)
        // The same key may now stand for another device (a new device took the name or address).
        if let previous = sighted[sighting], previous != device.info.id { drop(sighting) }
        sighted[sighting] = device.info.id
        var entry = entries[device.info.id] ?? Entry()
        let rank = sources.firstIndex { $0 === source } ?? sources.count
        if let index = entry.sightings.firstIndex(where: { $0.key == sighting }) {
            entry.sightings[index].device = device
        } else {
            entry.sightings.append((sighting, rank, device))
        }
        entries[device.info.id] = entry
        tellWatchers(id: device.info.id, now: merged(id: device.info.id))
    }

    public func source(_ source: any DeviceSource, lost key: String) {
        eventLoop.preconditionInEventLoop()
        drop(SightingKey(source: ObjectIdentifier(source), key: key))
    }

    public func sourceEnumerated(_ source: any DeviceSource) {
        eventLoop.preconditionInEventLoop()
        guard pendingEnumeration.remove(ObjectIdentifier(source)) != nil, pendingEnumeration.isEmpty else { return }
        finishEnumeration()
    }

    public func source(_ source: any DeviceSource, problem: String) {
        eventLoop.preconditionInEventLoop()
        broadcast(.error(problem))
    }
}
