import BatonClient
import BatonCore
import BatonNet
import Logging
import NIOCore

/// The client and the device directory that ``ClientModule`` and ``DiscoveryModule`` share:
/// one connection per device and one view of the network for a whole run. Give both modules
/// the same object. Both are made on first use, so a script that never touches the network
/// never loads the account or opens a socket. Confined to the runtime's event loop.
public final class DeviceAccess: @unchecked Sendable {
    /// How a run reaches devices.
    public struct Options: Sendable {
        /// How `baton.find`, `baton.devices` and `baton.watch` find devices: mDNS (on unless set
        /// to nil), static peers (`--peer`), liveness.
        public var discovery = DeviceDirectory.Options()
        /// How long connecting to a device may take before it counts as unavailable.
        public var connectTimeout: Duration = .seconds(3)
        /// Makes the connections' security on the first network call; an error fails that call.
        /// The default is plaintext, which reaches loopback agents only: `baton run` gives the
        /// account's mutual TLS, the agent its own identity.
        public var security: @Sendable () throws -> ConnectionSecurity = { .insecure }
        /// Who the client says it is in Hello (an agent gives its device's name).
        public var deviceName = ""
        /// The W3C `traceparent` the client passes on in Hello; empty for none.
        public var traceparent = ""
        /// How the client dials each kind of route (``BatonClient/Options/dialers``), given the
        /// loop it runs on (a broker's connection lives there): TCP by default.
        public var dialers: @Sendable (any EventLoop) -> [any LinkDialer] = { _ in [TCPDialer()] }

        /// The defaults: mDNS, no peers, 3 s to connect, plaintext.
        public init() {}
    }

    /// What it was made with.
    public let options: Options
    private var eventLoop: (any EventLoop)?
    private var logger = Logger(label: "baton.script")
    private var clientStorage: BatonClient?
    private var directoryStorage: DeviceDirectory?
    /// Routes of the devices whose tables this run pushed, by id (lower case).
    private var handles: [String: Handle] = [:]

    private struct Handle {
        var routes: [DeviceRoute]
        var account: String
    }

    /// An access for one run; the modules that share it attach it to their runtime.
    public init(options: Options = Options()) {
        self.options = options
    }

    /// Makes the client and directory on `runtime`'s loop, logging to its logger. The modules
    /// call it as they install; attaching to a second runtime is a mistake.
    public func attach(to runtime: LuaRuntime) {
        precondition(eventLoop == nil || eventLoop === runtime.eventLoop, "a DeviceAccess serves one run")
        eventLoop = runtime.eventLoop
        logger = runtime.logger
    }

    /// The client every call shares, made on first use with the security ``Options/security``
    /// makes (loading this device's account); a failure there is the calling function's error.
    public var client: BatonClient {
        get throws {
            if let existing = clientStorage { return existing }
            guard let eventLoop else { throw HostError.message("the device access is not attached to a runtime") }
            var client = BatonClient.Options()
            client.connectTimeout = TimeAmount(options.connectTimeout)
            client.deviceName = options.deviceName
            client.traceparent = options.traceparent
            client.dialers = options.dialers(eventLoop)
            do {
                client.security = try options.security()
            } catch {
                throw HostError.message("\(error)")
            }
            let made = BatonClient(eventLoop: eventLoop, options: client, logger: logger)
            clientStorage = made
            return made
        }
    }

    /// The directory, started (mDNS browsed, static peers polled) on first use; its
    /// `same_account` filters compare with the client's account.
    public var directory: DeviceDirectory {
        get throws {
            if let existing = directoryStorage { return existing }
            let client = try client
            var discovery = options.discovery
            if let account = client.options.security.trustStore?.credentials.fingerprint.hex { discovery.account = account }
            let directory = DeviceDirectory(client: client, options: discovery, logger: logger)
            directoryStorage = directory
            directory.start()
            return directory
        }
    }

    /// The directory if something started it already.
    var startedDirectory: DeviceDirectory? { directoryStorage }

    /// The device `text` names among those already known (a name or an id), as a target: its
    /// id and every route the directory knows; nil when none or several do, or nothing has
    /// looked yet.
    public func knownDevice(_ text: String) -> DeviceTarget? {
        guard let directory = directoryStorage,
              case .found(let device)? = directory.match(text, among: DeviceFilter(status: nil)) else { return nil }
        return directory.target(for: device)
    }

    /// Remembers the routes a device table pushed for `id` had (with its account, hex, or
    /// empty), so that a call given the table reaches the id there when the directory no
    /// longer knows it, rather than at the table's strings.
    func remember(id: String, routes: [DeviceRoute], account: String) {
        guard !id.isEmpty, !routes.isEmpty else { return }
        handles[id.lowercased()] = Handle(routes: routes, account: account)
    }

    /// How to reach the device with `id` and, failing what the directory knows of it, the
    /// routes a device table pushed for it had, or else the `routes` given (a saved table's
    /// addresses): its id must answer there, of the account it advertised (`account`, hex;
    /// this device's own if empty).
    public func target(id: String?, routes: [DeviceRoute], account: String) -> DeviceTarget {
        if let id, !id.isEmpty, let directory = directoryStorage, let known = directory.device(id: id) {
            return directory.target(for: known)
        }
        if let id, !id.isEmpty, let handle = handles[id.lowercased()] {
            return unknownTarget(id: id, routes: handle.routes, account: handle.account.isEmpty ? account : handle.account)
        }
        return unknownTarget(id: id, routes: routes, account: account)
    }

    /// A device the directory does not know, as a target: `id` must answer at `routes`.
    private func unknownTarget(id: String?, routes: [DeviceRoute], account: String) -> DeviceTarget {
        let own = (try? client.options.security.trustStore?.credentials.fingerprint.hex) ?? nil
        let device = RemoteDevice(info: DeviceInfo(id: id ?? "", name: "", kind: .unknown), routes: routes, account: account)
        var target = DeviceTarget(device, ownAccount: own ?? "")
        if id?.isEmpty ?? true { target.deviceID = nil }
        return target
    }

    /// Stops the directory (its mDNS sockets close; watchers hear nothing more). Stopping
    /// twice does nothing.
    public func stop() {
        directoryStorage?.stop()
        directoryStorage = nil
    }
}
