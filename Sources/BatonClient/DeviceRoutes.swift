import BatonCore
import BatonSecurity
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Where devices were last reached, by id (`device-routes.json` in the configuration folder):
/// the name each gave over an authenticated connection, the account it proved, and the routes
/// it answered at. A lookup by name tries them first, so that a device seen recently costs about
/// what its address would; the names also tell a device known but off from a typo.
///
/// A route here is a hint, never an identity: a connection through it must still prove the
/// device's id and account in its handshake (``KnownDevices`` pins what handshakes proved), and
/// a device reached there counts for a name only when it gives that name.
///
/// Safe from any thread. Writes go through ``FolderWrites`` (merged under a lock file of their
/// own with what other processes wrote) and are finished before the process exits.
public final class DeviceRoutes: Sendable {
    /// The file's name in the configuration folder.
    public static let file = "device-routes.json"
    static let lockFile = "device-routes.lock"
    /// The most devices remembered; the longest unseen go first.
    static let capacity = 256
    /// How old a sighting may be before it is written again only to say when it was.
    static let refreshAfter: Int64 = 3600

    /// Where one device was reached.
    public struct Entry: Sendable, Equatable {
        /// The name it gave over an authenticated connection.
        public var name: String
        /// The account it proved (hex fingerprint).
        public var account: String
        /// The routes it answered at, best first.
        public var routes: [DeviceRoute]
        /// When, in seconds since 1970.
        public var seen: Int64

        public init(name: String, account: String, routes: [DeviceRoute], seen: Int64) {
            self.name = name
            self.account = account
            self.routes = routes
            self.seen = seen
        }
    }

    private let folder: ConfigurationFolder?
    private let entries: NIOLockedValueBox<[String: Entry]>

    /// The routes remembered in `folder` (none, and nothing written, when nil). A damaged file
    /// counts as empty.
    public init(folder: ConfigurationFolder?) {
        self.folder = folder
        entries = NIOLockedValueBox(folder.flatMap { try? Self.read(in: $0) } ?? [:])
    }

    /// Every device remembered, by id (lower case).
    public var all: [String: Entry] {
        entries.withLockedValue { $0 }
    }

    /// The entry of device `id` (any case).
    public func entry(for id: String) -> Entry? {
        entries.withLockedValue { $0[id.lowercased()] }
    }

    /// The devices remembered under `name`, compared ignoring case.
    public func ids(named name: String) -> [String] {
        let folded = name.lowercased()
        return entries.withLockedValue { $0.filter { $0.value.name.lowercased() == folded }.keys.sorted() }
    }

    /// Remembers that device `id` named `name` (empty: as before), of `account`, answered at
    /// `routes` just now.
    /// The file is written only when something changed, or the last sighting is an hour old.
    public func remember(_ id: String, name: String, account: String, routes: [DeviceRoute]) {
        let id = id.lowercased()
        guard !id.isEmpty, !routes.isEmpty else { return }
        let now = Int64(time(nil))
        let changed: Entry? = entries.withLockedValue { entries in
            // Reached by id, a device gives no name: the one it gave before stays.
            let name = name.isEmpty ? entries[id]?.name ?? "" : name
            let entry = Entry(name: name, account: account, routes: routes, seen: now)
            if let old = entries[id], old.name == name, old.account == account, old.routes == routes,
               now - old.seen < Self.refreshAfter { return nil }
            entries[id] = entry
            return entry
        }
        guard let changed, let folder else { return }
        FolderWrites.async {
            try? folder.withLock(Self.lockFile) {
                var all = (try? Self.read(in: folder)) ?? [:]
                all[id] = changed
                if all.count > Self.capacity {
                    for (old, _) in all.sorted(by: { $0.value.seen < $1.value.seen }).prefix(all.count - Self.capacity) {
                        all[old] = nil
                    }
                }
                try folder.write(Self.text(of: all), to: Self.file)
            }
        }
    }

    /// Waits until every route learnt so far is in the file.
    public static func flush() {
        FolderWrites.flush()
    }

    /// A route as written (its description): `host:port`, or `broker:ID` of the entry's
    /// `account` (none without one); nil for anything else.
    static func route(from text: String, account: String) -> DeviceRoute? {
        if text.hasPrefix("broker:") {
            let id = text.dropFirst("broker:".count)
            guard !id.isEmpty, !account.isEmpty else { return nil }
            return .broker(BrokerRoute(account: account, deviceID: String(id)))
        }
        return RemoteDevice.Endpoint(text).map(DeviceRoute.tcp)
    }

    static func read(in folder: ConfigurationFolder) throws -> [String: Entry] {
        guard let text = try folder.read(file), case .object(let members)? = try JSON.parse(text)["devices"] else { return [:] }
        var entries: [String: Entry] = [:]
        for member in members {
            let account = member.value["account"]?.stringValue ?? ""
            let routes = (member.value["routes"]?.arrayValue ?? []).compactMap(\.stringValue).compactMap { route(from: $0, account: account) }
            guard !routes.isEmpty else { continue }
            entries[member.key.lowercased()] = Entry(
                name: member.value["name"]?.stringValue ?? "", account: account,
                routes: routes, seen: member.value["seen"]?.intValue ?? 0)
        }
        return entries
    }

    static func text(of entries: [String: Entry]) -> String {
        let devices = entries.sorted { $0.key < $1.key }.map { id, entry in
            JSON.Member(id, .object([
                .init("name", .string(entry.name)), .init("account", .string(entry.account)),
                .init("routes", .array(entry.routes.map { .string($0.description) })), .init("seen", .int(entry.seen)),
            ]))
        }
        return JSON.object([.init("version", .int(1)), .init("devices", .object(devices))]).serialized(pretty: true) + "\n"
    }
}
