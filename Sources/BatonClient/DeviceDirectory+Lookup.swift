import BatonCore
import BatonSecurity
import NIOCore

// Finding one device by name or id: what discovery sees, the routes where devices were last
// reached, and the names this device knows (enrolled, met, reached) to tell a device that is
// off from a name nobody knows.
extension DeviceDirectory {
    /// What a lookup by name or id settles on.
    public enum Lookup: Sendable, Equatable {
        case found(RemoteDevice)
        /// Nobody knows the name or id; the known names closest to it.
        case notFound(suggestions: [String])
        /// Several devices share the name: their ids.
        case ambiguous([String])
        /// Known devices (enrolled, met or reached before: their ids) answer to it, but none
        /// answers now.
        case unavailable([String])

        /// Why the lookup of `name` failed, or nil when it found a device.
        public func failure(for name: String) -> DeviceLookupError? {
            switch self {
            case .found: nil
            case .notFound(let suggestions): .notFound(name, suggestions: suggestions)
            case .ambiguous(let ids): .ambiguous(name, ids: ids)
            case .unavailable(let ids): .knownButUnavailable(name, ids: ids)
            }
        }
    }

    /// The device `nameOrID` names among those known now: an id matches at once; a name only
    /// once enumeration is over, so a second device of the same name is not missed. Nil while
    /// it may still turn up. Only devices `filter` passes count. A name (any case) matches what
    /// a device advertises or, for a device of this account, the name it gave over TLS before;
    /// only ``find(_:among:timeout:)`` proves it now.
    public func match(_ nameOrID: String, among filter: DeviceFilter = DeviceFilter()) -> Lookup? {
        eventLoop.preconditionInEventLoop()
        switch candidates(nameOrID, among: filter, renamed: false) {
        case nil: return nil
        case .byID(let device): return .found(device)
        case .byName(let named): return named.count == 1 ? .found(named[0]) : .ambiguous(named.map(\.info.id))
        }
    }

    /// Finds the device `nameOrID` names (a name in any case, or an id) among those `filter`
    /// passes, within `timeout`; starts the directory if it is not running.
    ///
    /// A device reached before under that name or id is tried first where it was reached
    /// (``DeviceRoutes``): found as soon as it answers there, proving its id and account in the
    /// handshake and giving the name, so that a device seen recently costs about what its
    /// address would. Discovery runs meanwhile (at once when nothing is remembered): an id is
    /// found when a source sees it; a name once enumeration is over, and then only the devices
    /// that prove it: each candidate (advertising the name, having given it over TLS before,
    /// or advertising the name a conflict gave it, `Name (2)`) is asked to describe itself
    /// over a connection that checks who it is, and counts when it gives that name. Whoever
    /// shouts a name first on the network does not get it.
    ///
    /// A name or id nobody knows is `notFound` once enumeration is over, with the known names
    /// closest to it; one of a device enrolled, met or reached before that answers nowhere is
    /// `unavailable` once `timeout` has passed (it may be just coming up).
    public func find(_ nameOrID: String, among filter: DeviceFilter = DeviceFilter(), timeout: TimeAmount) -> EventLoopFuture<Lookup> {
        eventLoop.preconditionInEventLoop()
        let state = LookupRace(promise: eventLoop.makePromise(of: Lookup.self))
        guard let hit = remembered(nameOrID, among: filter) else {
            startDiscovery(nameOrID, among: filter, timeout: timeout, for: state)
            return state.promise.futureResult
        }
        reach(hit.id, hit.entry, as: nameOrID, among: filter, timeout: timeout).whenSuccess { [self] device in
            if let device {
                state.settle(.found(device))
            } else {
                startDiscovery(nameOrID, among: filter, timeout: timeout, for: state)
            }
        }
        // Not waiting on a route long: one that does not answer at once may have moved.
        let grace = eventLoop.scheduleTask(in: Self.rememberedGrace) { [self] in
            startDiscovery(nameOrID, among: filter, timeout: timeout, for: state)
        }
        state.promise.futureResult.whenComplete { _ in grace.cancel() }
        return state.promise.futureResult
    }

    /// Starts the directory and its look for `nameOrID`, once per lookup.
    private func startDiscovery(_ nameOrID: String, among filter: DeviceFilter, timeout: TimeAmount, for state: LookupRace) {
        guard !state.discovering, !state.settled else { return }
        state.discovering = true
        start()
        discover(nameOrID, among: filter, timeout: timeout).whenSuccess { lookup in
            state.settle(lookup)
        }
    }

    /// How long a remembered route has before discovery starts beside it.
    static let rememberedGrace = TimeAmount.milliseconds(250)

    /// One lookup's outcome: the first answer wins.
    private final class LookupRace: @unchecked Sendable {
        let promise: EventLoopPromise<Lookup>
        var discovering = false
        var settled = false

        init(promise: EventLoopPromise<Lookup>) {
            self.promise = promise
        }

        func settle(_ lookup: Lookup) {
            guard !settled else { return }
            settled = true
            promise.succeed(lookup)
        }
    }

    // MARK: discovery

    /// Who may answer to `nameOrID`.
    private enum Candidates {
        case byID(RemoteDevice)
        case byName([RemoteDevice])
    }

    /// Names compare ignoring case.
    static func fold(_ name: String) -> String { name.lowercased() }

    private func candidates(_ nameOrID: String, among filter: DeviceFilter, renamed: Bool) -> Candidates? {
        let all = devices(matching: filter)
        let wanted = Self.fold(nameOrID)
        if let byID = all.first(where: { Self.fold($0.info.id) == wanted }) { return .byID(byID) }
        guard enumerated else { return nil }
        let named = all.filter { device in
            Self.fold(device.info.name) == wanted || known?.pin(for: device.info.id).map({ Self.fold($0.name) == wanted }) == true
                || (renamed && KnownDevices.isConflictRename(Self.fold(device.info.name), of: wanted))
        }
        return named.isEmpty ? nil : .byName(named)
    }

    /// Discovery's answer: candidates proven, or why there are none.
    private func discover(_ nameOrID: String, among filter: DeviceFilter, timeout: TimeAmount) -> EventLoopFuture<Lookup> {
        let deadline = NIODeadline.now() + timeout
        let knownIDs = self.knownIDs(nameOrID, among: filter)
        return settle(nameOrID, among: filter, timeout: timeout, giveUpAtEnumeration: knownIDs.isEmpty).flatMap { [self] found -> EventLoopFuture<Lookup> in
            switch found {
            case nil: eventLoop.makeSucceededFuture(.notFound(suggestions: []))
            case .byID(let device): eventLoop.makeSucceededFuture(.found(device))
            case .byName(let named): prove(nameOrID, among: named, until: deadline)
            }
        }.map { [self] (lookup: Lookup) -> Lookup in
            switch lookup {
            case .found(let device):
                // By id: the name it advertises is a hint, not worth remembering. By name: prove
                // remembered the name it gave.
                if Self.fold(device.info.id) == Self.fold(nameOrID) { remember(device, name: "") }
                return lookup
            case .notFound:
                let ids = self.knownIDs(nameOrID, among: filter)
                return ids.isEmpty ? .notFound(suggestions: suggestions(for: nameOrID, among: filter)) : .unavailable(ids)
            case .ambiguous, .unavailable:
                return lookup
            }
        }
    }

    /// Waits until ``candidates(_:among:renamed:)`` has some, or `timeout` passes (nil), or,
    /// when `giveUpAtEnumeration`, enumeration is over without any.
    private func settle(
        _ nameOrID: String, among filter: DeviceFilter, timeout: TimeAmount, giveUpAtEnumeration: Bool
    ) -> EventLoopFuture<Candidates?> {
        let promise = eventLoop.makePromise(of: Candidates?.self)
        if let now = candidates(nameOrID, among: filter, renamed: true) {
            promise.succeed(now)
            return promise.futureResult
        }
        var watch: Watch?
        var settled = false
        let finish = { [self] (result: Candidates?) in
            guard !settled else { return }
            settled = true
            if let watch { unwatch(watch) }
            promise.succeed(result)
        }
        watch = self.watch(filter) { [self] event in
            if let now = candidates(nameOrID, among: filter, renamed: true) {
                finish(now)
            } else if giveUpAtEnumeration, case .enumerationCompleted = event {
                // A name nobody knows: more waiting would only cost the caller.
                finish(nil)
            }
        }
        if settled, let watch { unwatch(watch) }
        let onTimeout = NIOLoopBound(finish, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: timeout) { onTimeout.value(nil) }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }

    /// The candidates that prove, by `deadline` (at least a second from now), to be called
    /// `name`: they describe themselves over a connection that checks who they are, giving
    /// `name` (or having given it before), in any case. Failing those, the ones that give the
    /// name a conflict moved them to (`name (2)`): while a stranger holds the name on the
    /// network, the device that proves it is the account's is the one meant.
    private func prove(_ name: String, among named: [RemoteDevice], until deadline: NIODeadline) -> EventLoopFuture<Lookup> {
        let wait = max(deadline - .now(), .seconds(1))
        let wanted = Self.fold(name)
        let answers = named.map { [self] device in
            client.describe(target(for: device), timeout: wait).map { [self] info, _ -> (RemoteDevice, exact: Bool)? in
                if Self.fold(info.name) == wanted || known?.pin(for: device.info.id).map({ Self.fold($0.name) == wanted }) == true {
                    remember(device, name: info.name)
                    return (device, true)
                }
                return KnownDevices.isConflictRename(Self.fold(info.name), of: wanted) ? (device, false) : nil
            }.recover { [logger] error in
                logger.notice("a device advertising a name did not prove it", metadata: [
                    "name": "\(name)", "device": "\(device.info.id)", "error": "\(error)",
                ])
                return nil
            }
        }
        return EventLoopFuture.whenAllSucceed(answers, on: eventLoop).map { results in
            let exact = results.compactMap { $0?.exact == true ? $0?.0 : nil }
            let proven = exact.isEmpty ? results.compactMap { $0?.0 } : exact
            switch proven.count {
            case 0: return .notFound(suggestions: [])
            case 1: return .found(proven[0])
            default: return .ambiguous(proven.map(\.info.id))
            }
        }
    }

    // MARK: remembered routes

    /// The one device remembered under `nameOrID` (its id, or its name in any case) that
    /// `filter`'s account rule lets in; nil for none or several (discovery decides then).
    private func remembered(_ nameOrID: String, among filter: DeviceFilter) -> (id: String, entry: DeviceRoutes.Entry)? {
        guard let routes else { return nil }
        let ids = routes.entry(for: nameOrID) != nil ? [Self.fold(nameOrID)] : routes.ids(named: nameOrID)
        let allowed = ids.compactMap { id in routes.entry(for: id).map { (id: id, entry: $0) } }
            .filter { filter.authorization == .anonymous || $0.entry.account == account }
        return allowed.count == 1 ? allowed[0] : nil
    }

    /// Device `id` reached at its remembered routes, proving its id and account, if it answers
    /// within `timeout` and gives the name asked for (or was asked for by id); nil otherwise.
    private func reach(
        _ id: String, _ entry: DeviceRoutes.Entry, as nameOrID: String, among filter: DeviceFilter, timeout: TimeAmount
    ) -> EventLoopFuture<RemoteDevice?> {
        let remembered = RemoteDevice(
            info: DeviceInfo(id: id, name: entry.name, kind: .unknown), routes: entry.routes, account: entry.account,
            sources: [DiscoverySource(rawValue: "remembered")])
        let wanted = Self.fold(nameOrID)
        // A connection of its own: a stale route must not hold up the device found elsewhere.
        return client.describeApart(DeviceTarget(remembered, ownAccount: account), timeout: timeout).map { [self] info -> RemoteDevice? in
            let named = Self.fold(info.name) == wanted || known?.pin(for: id).map({ Self.fold($0.name) == wanted }) == true
            guard Self.fold(info.id) == id, named || wanted == id else { return nil }
            var device = remembered
            device.info = info
            guard filter.matches(device, account: account) else { return nil }
            remember(device, name: info.name)
            return device
        }.recover { [logger] error in
            logger.debug("a remembered route did not lead to the device", metadata: [
                "device": "\(id)", "routes": "\(entry.routes.map(\.description).joined(separator: " "))", "error": "\(error)",
            ])
            return nil
        }
    }

    /// Remembers where `device` was just reached, under `name`: the name it gave over an
    /// authenticated connection, else the one it gave before (its pin), else none.
    private func remember(_ device: RemoteDevice, name: String) {
        guard let routes, !device.routes.isEmpty else { return }
        let pinned = known?.pin(for: device.info.id)?.name ?? ""
        routes.remember(device.info.id, name: name.isEmpty ? pinned : name, account: device.account, routes: device.routes)
    }

    // MARK: known names

    /// The devices known by `nameOrID` that `filter`'s account rule lets in: enrolled in the
    /// account or met (pinned, with the names they gave), reached before (remembered routes),
    /// or, by id, seen by a source now, whatever their status.
    private func knownIDs(_ nameOrID: String, among filter: DeviceFilter) -> [String] {
        let wanted = Self.fold(nameOrID)
        let anyAccount = filter.authorization == .anonymous
        var ids = Set<String>()
        for (id, pin) in known?.all ?? [:] where anyAccount || pin.account.hex == account {
            if id == wanted || Self.fold(pin.name) == wanted { ids.insert(id) }
        }
        for (id, entry) in routes?.all ?? [:] where anyAccount || entry.account == account {
            if id == wanted || Self.fold(entry.name) == wanted { ids.insert(id) }
        }
        var anyStatus = filter
        anyStatus.status = nil
        // A name a source advertises proves nothing (its device may give another): ids only.
        for device in devices(matching: anyStatus) where Self.fold(device.info.id) == wanted {
            ids.insert(Self.fold(device.info.id))
        }
        return ids.sorted()
    }

    /// The known names closest to `nameOrID` (at most three, closest first): a few letters
    /// off, or one holding the other.
    private func suggestions(for nameOrID: String, among filter: DeviceFilter) -> [String] {
        let anyAccount = filter.authorization == .anonymous
        var names: [String: String] = [:] // folded: as written
        for pin in (known?.all ?? [:]).values where !pin.name.isEmpty && (anyAccount || pin.account.hex == account) {
            names[Self.fold(pin.name)] = pin.name
        }
        for entry in (routes?.all ?? [:]).values where !entry.name.isEmpty && (anyAccount || entry.account == account) {
            names[Self.fold(entry.name)] = names[Self.fold(entry.name)] ?? entry.name
        }
        var anyStatus = filter
        anyStatus.status = nil
        for device in devices(matching: anyStatus) where !device.info.name.isEmpty {
            names[Self.fold(device.info.name)] = names[Self.fold(device.info.name)] ?? device.info.name
        }
        let wanted = Self.fold(nameOrID)
        let scored = names.compactMap { folded, name -> (Int, String)? in
            let distance = Self.editDistance(wanted, folded)
            if distance <= max(1, min(3, wanted.count / 3)) { return (distance, name) }
            let (short, long) = wanted.count < folded.count ? (wanted, folded) : (folded, wanted)
            if short.count >= 3, long.contains(short) { return (long.count - short.count, name) }
            return nil
        }
        return scored.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.prefix(3).map(\.1)
    }

    /// Levenshtein distance between `a` and `b`, by characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
