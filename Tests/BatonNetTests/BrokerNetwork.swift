import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Devices on other networks, with a broker between them: a `hub` namespace for the broker(s)
/// and device namespaces `a`, `b` (and `c`), each joined to the hub only by a veth pair of its
/// own on a /24 of its own (device N: `up0` 10.78.N.2 ↔ the hub's `dev-X` 10.78.N.1). The hub
/// does not forward (ip_forward off, no multicast routing), so a device reaches the hub and
/// nothing else: no other device, no multicast of another device (mDNS finds nobody).
///
/// Every broker listens on one address, ``brokerHost`` (10.78.0.1, on the hub's loopback),
/// which every device reaches through its default route via its own hub end: so one broker
/// URL (`mqtt://10.78.0.1:PORT`) serves every device, as an account's one broker URL must.
///
/// ``with(devices:_:)`` kills every process the body started that is still running (SIGKILL),
/// brokers included, and deletes the namespaces, whatever happens. Names are random, so tests
/// run concurrently. Needs root, as ``NamespacePair``.
final class BrokerNetwork: @unchecked Sendable {
    /// The hub's namespace, `baton-bn-<random>-hub`.
    let hub: String
    /// The device namespaces, `baton-bn-<random>-a`, `-b`, `-c`, in that order.
    let devices: [String]
    /// Holds every process's files: brokers' configurations and logs, agents' homes, captures.
    let directory: TemporaryDirectory
    let spawner: NamespaceSpawner

    private let lock = NSLock()
    private var nextPort = 18830

    /// The address every broker in the hub listens on, and every device reaches.
    static let brokerHost = "10.78.0.1"

    var a: String { devices[0] }
    var b: String { devices[1] }
    var c: String { devices[2] }

    /// The name of a device namespace's end of its veth pair.
    static let uplink = "up0"

    /// Plain-TCP mosquitto settings for ``startMosquitto(config:name:port:clientTLS:)``:
    /// anonymous clients, Nagle off.
    static let plainConfig = """
        listener @PORT@ @HOST@
        allow_anonymous true
        set_tcp_nodelay true

        """

    /// The address `namespace` holds: a device's own (10.78.N.2) or, for the hub, ``brokerHost``.
    func address(of namespace: String) -> String {
        guard let n = devices.firstIndex(of: namespace) else { return Self.brokerHost }
        return "10.78.\(n + 1).2"
    }

    /// The hub's end of a device namespace's link (10.78.N.1), the device's default gateway.
    func gateway(of namespace: String) -> String {
        "10.78.\((devices.firstIndex(of: namespace) ?? 0) + 1).1"
    }

    /// The name of the hub's end of a device namespace's link (`dev-a`, `dev-b`, `dev-c`).
    func hubInterface(of namespace: String) -> String {
        "dev-" + String(namespace.split(separator: "-").last ?? "")
    }

    private init(devices count: Int) throws {
        let prefix = "baton-bn-" + String(UInt32.random(in: .min ... .max), radix: 16)
        hub = prefix + "-hub"
        let devices = ["a", "b", "c"].prefix(count).map { prefix + "-" + $0 }
        self.devices = devices
        directory = try TemporaryDirectory("baton-brokernet")
        spawner = NamespaceSpawner(directory: directory) { namespace in
            devices.firstIndex(of: namespace).map { "10.78.\($0 + 1).2" } ?? BrokerNetwork.brokerHost
        }
        let ip = NamespacePair.ip
        do {
            for namespace in [hub] + devices {
                try NamespacePair.command(ip, "netns", "add", namespace)
                try NamespacePair.command(
                    ip, "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                    "net.ipv6.conf.default.accept_dad=0")
                try NamespacePair.command(ip, "-n", namespace, "link", "set", "lo", "up")
            }
            // A new namespace may inherit forwarding from the host's: the hub must route nothing.
            try NamespacePair.command(
                ip, "netns", "exec", hub, "sysctl", "-qw", "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0")
            try NamespacePair.command(ip, "-n", hub, "addr", "add", Self.brokerHost + "/32", "dev", "lo")
            for namespace in devices {
                let hubEnd = hubInterface(of: namespace)
                try NamespacePair.command(
                    ip, "link", "add", Self.uplink, "netns", namespace, "type", "veth", "peer", "name", hubEnd, "netns", hub)
                try NamespacePair.command(ip, "-n", namespace, "addr", "add", address(of: namespace) + "/24", "dev", Self.uplink)
                try NamespacePair.command(ip, "-n", hub, "addr", "add", gateway(of: namespace) + "/24", "dev", hubEnd)
                try NamespacePair.command(ip, "-n", namespace, "link", "set", Self.uplink, "up")
                try NamespacePair.command(ip, "-n", hub, "link", "set", hubEnd, "up")
                try NamespacePair.command(ip, "-n", namespace, "route", "add", "default", "via", gateway(of: namespace))
            }
            let forwarding = try NamespacePair.command(ip, "netns", "exec", hub, "sysctl", "-n", "net.ipv4.ip_forward")
            guard forwarding.trimmingCharacters(in: .whitespacesAndNewlines) == "0" else {
                throw NamespacePair.Failure("the hub forwards (net.ipv4.ip_forward = \(forwarding))")
            }
            for namespace in devices {
                try waitForCarrier(namespace, Self.uplink)
                try waitForCarrier(hub, hubInterface(of: namespace))
            }
        } catch {
            removeNamespaces()
            throw error
        }
    }

    /// Runs `body` with a fresh hub and `devices` (1 to 3) device namespaces; afterwards,
    /// whatever happened, kills the processes it left running (brokers too) and deletes the
    /// namespaces.
    static func with<T>(devices: Int = 2, _ body: (BrokerNetwork) async throws -> T) async throws -> T {
        guard getuid() == 0 else {
            throw NamespacePair.Failure("""
                these tests make network namespaces (ip netns) and must run as root; they do in CI. \
                Run them with sudo, or in a container as root.
                """)
        }
        guard (1...3).contains(devices) else { throw NamespacePair.Failure("a broker network has 1 to 3 devices, not \(devices)") }
        let network = try BrokerNetwork(devices: devices)
        do {
            let result = try await body(network)
            await network.tearDown()
            return result
        } catch {
            await network.tearDown()
            throw error
        }
    }

    private func tearDown() async {
        await spawner.killAll()
        removeNamespaces()
    }

    private func removeNamespaces() {
        for namespace in [hub] + devices {
            _ = try? NamespacePair.command(NamespacePair.ip, "netns", "delete", namespace)
        }
    }

    /// Waits (at most 10 s) until `interface` in `namespace` is up with a carrier.
    func waitForCarrier(_ namespace: String, _ interface: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let state = try NamespacePair.command(NamespacePair.ip, "-n", namespace, "-o", "link", "show", interface)
            if state.contains("LOWER_UP"), state.contains("state UP") { return }
            usleep(10_000)
        }
        throw NamespacePair.Failure("\(interface) in \(namespace) has no carrier after 10 s")
    }

    /// A port no broker of this network uses yet (the hub is private, so no one else's).
    func freshPort() -> Int {
        lock.withLock {
            defer { nextPort += 1 }
            return nextPort
        }
    }

    // MARK: processes, as NamespacePair's

    /// Runs `baton ARGS` inside `namespace` to completion with `xdg` as its XDG_CONFIG_HOME
    /// (the shared test account's holder by default), killed after 30 s, which fails the test.
    func baton(
        in namespace: String, _ arguments: [String], xdg: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CLIResult {
        try await spawner.baton(in: namespace, arguments, xdg: xdg, sourceLocation: sourceLocation)
    }

    /// Starts `baton agent --listen 0.0.0.0:0 ARGS` in `namespace` with `home` (its
    /// XDG_CONFIG_HOME is `home/xdg`; a new device of the shared account unless given); returns
    /// once it listens. Its `host` is the namespace's own address. Pass `--broker URL` in
    /// `arguments` to reach the broker.
    func agent(
        in namespace: String, name: String? = nil, kind: String? = nil, config: String? = nil,
        arguments: [String] = [], home: AgentHome? = nil
    ) async throws -> NamespacedAgent {
        try await spawner.agent(in: namespace, name: name, kind: kind, config: config, arguments: arguments, home: home)
    }

    /// Starts `baton devices --watch --json ARGS` in `namespace`, with `xdg` as its
    /// XDG_CONFIG_HOME (the shared test account's holder by default).
    func watcher(in namespace: String, _ arguments: [String] = [], xdg: String? = nil) throws -> DeviceWatcher {
        try spawner.watcher(in: namespace, arguments, xdg: xdg)
    }

    /// Starts `python3 -c SCRIPT ARGS` in `namespace`.
    func python(in namespace: String, _ script: String, _ arguments: [String] = []) throws -> ScriptProcess {
        try spawner.python(in: namespace, script, arguments)
    }

    /// Whether a TCP connection from `namespace` to `host:port` is accepted, trying (1 s per
    /// attempt) until one is or `limit` seconds have passed.
    func canConnect(from namespace: String, to host: String, port: Int, within limit: Double = 10) async throws -> Bool {
        let result = try await spawner.run(
            in: namespace, "python3", ["-c", Self.connectScript, host, String(port), String(limit)], prefix: "connect",
            limit: limit + 10)
        return result.code == 0
    }

    /// Connects to argv[1]:argv[2] until it works (exit 0) or argv[3] seconds pass (exit 1).
    static let connectScript = """
        import socket, sys, time
        host, port, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
        end = time.monotonic() + limit
        while True:
            try:
                socket.create_connection((host, port), 1).close()
                sys.exit(0)
            except OSError as error:
                if time.monotonic() > end:
                    print(error)
                    sys.exit(1)
                time.sleep(0.05)
        """
}
