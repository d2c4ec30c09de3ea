import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two private network namespaces, `a` and `b`, joined by a veth pair (`v0` 10.77.0.1/24 in
/// `a`, `v1` 10.77.0.2/24 in `b`): two hosts on a link of their own, with real multicast and
/// nobody else on it. Processes run inside with `ip netns exec`, as a user would run them on
/// two machines. Needs root; CI runs the tests as root, and they fail rather than skip without.
///
/// ``with(_:)`` kills every process the body started that is still running (SIGKILL) and
/// deletes both namespaces, whatever happens.
final class NamespacePair: @unchecked Sendable {
    /// The namespaces' names, `baton-nt-<random>-a` and `-b`.
    let a: String
    let b: String
    /// Holds every process's files: agents' homes, watchers' output, scripts.
    let directory: TemporaryDirectory
    /// Starts the processes inside, and kills those left running at the end.
    private let spawner: NamespaceSpawner

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The address the namespace's end of the veth holds.
    func address(of namespace: String) -> String { namespace == a ? "10.77.0.1" : "10.77.0.2" }

    /// The name of the namespace's end of the veth.
    func interface(of namespace: String) -> String { namespace == a ? "v0" : "v1" }

    private init() throws {
        let prefix = "baton-nt-" + String(UInt32.random(in: .min ... .max), radix: 16)
        let a = prefix + "-a"
        self.a = a
        b = prefix + "-b"
        directory = try TemporaryDirectory("baton-netns")
        spawner = NamespaceSpawner(directory: directory) { $0 == a ? "10.77.0.1" : "10.77.0.2" }
        do {
            for namespace in [a, b] {
                try Self.command(Self.ip, "netns", "add", namespace)
                // Link-local IPv6 usable at once, without duplicate address detection's wait.
                try Self.command(
                    Self.ip, "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                    "net.ipv6.conf.default.accept_dad=0")
                try Self.command(Self.ip, "-n", namespace, "link", "set", "lo", "up")
            }
            // Made inside the namespaces, so the names never clash with another test's.
            try Self.command(Self.ip, "link", "add", "v0", "netns", a, "type", "veth", "peer", "name", "v1", "netns", b)
            try Self.command(Self.ip, "-n", a, "addr", "add", "10.77.0.1/24", "dev", "v0")
            try Self.command(Self.ip, "-n", b, "addr", "add", "10.77.0.2/24", "dev", "v1")
            try setLink(a, up: true)
            try setLink(b, up: true)
            try waitForCarrier(a)
            try waitForCarrier(b)
        } catch {
            removeNamespaces()
            throw error
        }
    }

    /// Runs `body` with two fresh namespaces; afterwards, whatever happened, kills the processes
    /// it left running and deletes the namespaces.
    static func with<T>(_ body: (NamespacePair) async throws -> T) async throws -> T {
        guard getuid() == 0 else {
            throw Failure("""
                these tests make network namespaces (ip netns) and must run as root; they do in CI. \
                Run them with sudo, or in a container as root.
                """)
        }
        let pair = try NamespacePair()
        do {
            let result = try await body(pair)
            await pair.tearDown()
            return result
        } catch {
            await pair.tearDown()
            throw error
        }
    }

    private func tearDown() async {
        await spawner.killAll()
        removeNamespaces()
    }

    private func removeNamespaces() {
        for namespace in [a, b] {
            _ = try? Self.command(Self.ip, "netns", "delete", namespace)
        }
    }

    // MARK: links

    /// `ip -n NAMESPACE link set v0|v1 up|down`.
    func setLink(_ namespace: String, up: Bool) throws {
        try Self.command(Self.ip, "-n", namespace, "link", "set", interface(of: namespace), up ? "up" : "down")
    }

    /// Waits (at most 10 seconds) for the namespace's veth end to be up with a carrier, as the
    /// kernel reports a little after the link is set up.
    func waitForCarrier(_ namespace: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let state = try Self.command(Self.ip, "-n", namespace, "-o", "link", "show", interface(of: namespace))
            if state.contains("LOWER_UP"), state.contains("state UP") { return }
            usleep(10_000)
        }
        throw Failure("\(interface(of: namespace)) in \(namespace) has no carrier after 10 s")
    }

    // MARK: processes

    /// Starts `executable ARGS` inside `namespace` with `ip netns exec` (which execs it, so the
    /// process id is the program's own); stdout and stderr go to files of ``directory``.
    func spawn(
        in namespace: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        stdout: String, stderr: String
    ) throws -> ChildProcess {
        try spawner.spawn(in: namespace, executable, arguments, environment: environment, stdout: stdout, stderr: stderr)
    }

    /// Runs `baton ARGS` inside `namespace` to completion, as the holder of the shared test account (or
    /// with `xdg` as its XDG_CONFIG_HOME), killed after 30 s, which fails the test.
    func baton(
        in namespace: String, _ arguments: [String], xdg: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CLIResult {
        try await spawner.baton(in: namespace, arguments, xdg: xdg, sourceLocation: sourceLocation)
    }

    /// Starts `baton agent --listen 0.0.0.0:0` in `namespace`, as a user would on a LAN, with
    /// `home` as its XDG_CONFIG_HOME (a new one, so a new device id, unless given) and
    /// `config` (`@DIR@` replaced by the home's path) as its configuration; returns once it
    /// listens.
    func agent(
        in namespace: String, name: String? = nil, kind: String? = nil, config: String? = nil,
        arguments: [String] = [], home: AgentHome? = nil
    ) async throws -> NamespacedAgent {
        try await spawner.agent(in: namespace, name: name, kind: kind, config: config, arguments: arguments, home: home)
    }

    /// Starts `baton devices --watch --json ARGS` in `namespace`.
    func watcher(in namespace: String, _ arguments: [String] = []) throws -> DeviceWatcher {
        try spawner.watcher(in: namespace, arguments)
    }

    /// Starts `python3 -c SCRIPT ARGS` in `namespace` (python-zeroconf is installed in CI).
    func python(in namespace: String, _ script: String, _ arguments: [String] = []) throws -> ScriptProcess {
        try spawner.python(in: namespace, script, arguments)
    }

    // MARK: commands

    /// `ip`, wherever it is installed.
    static let ip: String = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"

    /// Runs a command to completion, throwing if it fails; its output.
    @discardableResult
    static func command(_ arguments: String...) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure("\(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(output)")
        }
        return output
    }
}

/// An agent's own directory: its XDG_CONFIG_HOME (`xdg/`, so its device id), configuration
/// and output. Starting a second agent with the same home brings the same device back.
final class AgentHome: Sendable {
    let path: String

    /// A new home whose device belongs to `account` (nil: a stranger, with its own account).
    init(in directory: TemporaryDirectory, account: TestAccount? = .shared) throws {
        path = directory.file("agent-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: path + "/xdg", withIntermediateDirectories: true)
        try account?.enrol(xdg: path + "/xdg")
    }

    /// The contents of the file `name` in the home, or nil.
    func read(_ name: String) -> String? { try? String(contentsOfFile: path + "/" + name, encoding: .utf8) }
}

/// A `baton agent` running in a namespace.
final class NamespacedAgent: Sendable {
    let namespace: String
    /// The address other hosts reach it at (its namespace's veth address) and its port.
    let host: String
    let port: Int
    let id: String
    /// The name it started with (before any rename on the network).
    let name: String
    let home: AgentHome
    let process: ChildProcess
    private let stderr: String

    init(namespace: String, host: String, port: Int, id: String, name: String, home: AgentHome, process: ChildProcess, stderr: String) {
        self.namespace = namespace
        self.host = host
        self.port = port
        self.id = id
        self.name = name
        self.home = home
        self.process = process
        self.stderr = stderr
    }

    /// `host:port`.
    var address: String { "\(host):\(port)" }

    var isRunning: Bool { process.isRunning }

    /// Its log (JSON lines) so far.
    var log: String { Self.read(stderr) }

    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// The name it advertises over mDNS once probing is over (from its `advertised over mDNS`
    /// log line), or nil if it has not said so within `limit` seconds.
    func advertisedName(within limit: Double = 20) async -> String? {
        var found: String?
        _ = await eventually(within: limit) {
            for line in log.split(separator: "\n") {
                guard let object = try? JSON.parse(String(line)), object["message"] == .string("advertised over mDNS") else { continue }
                found = object["name"]?.stringValue
                return true
            }
            return false
        }
        return found
    }

    /// Sends `signal` and waits for the process to end; its exit code (128 + n for signal n),
    /// nil if it did not end within 15 s (it is killed then).
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) async -> Int32? {
        process.signal(signal)
        if let code = await process.exit.wait(within: 15) { return code }
        process.signal(SIGKILL)
        _ = await process.exit.wait(within: 5)
        return nil
    }
}

/// One line of `baton devices --watch --json`.
struct WatchEvent: CustomStringConvertible {
    /// added, updated, removed, enumeration_completed or error.
    let event: String
    let object: JSON

    /// A field of the device (`id`, `name`, `kind`, `status`, `address`, ...) as a string.
    subscript(field: String) -> String? { object["device"]?[field]?.stringValue }

    var id: String? { self["id"] }
    var name: String? { self["name"] }
    var message: String? { object["message"]?.stringValue }
    var description: String { object.serialized() }
}

/// A `baton devices --watch --json` process, read line by line from its stdout.
final class DeviceWatcher: Sendable {
    let namespace: String
    let arguments: [String]
    let process: ChildProcess
    private let stdout: String
    private let stderr: String

    init(namespace: String, arguments: [String], process: ChildProcess, stdout: String, stderr: String) {
        self.namespace = namespace
        self.arguments = arguments
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Every complete line so far, parsed; a line that is not a JSON event object fails the test.
    func events(sourceLocation: SourceLocation = #_sourceLocation) -> [WatchEvent] {
        let text = NamespacedAgent.read(stdout)
        // Only whole lines: the last may still be being written.
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").compactMap { line in
            guard let object = try? JSON.parse(String(line)), let event = object["event"]?.stringValue else {
                Issue.record("not a JSON event from the watcher: \(line)", sourceLocation: sourceLocation)
                return nil
            }
            return WatchEvent(event: event, object: object)
        }
    }

    /// How many events have been printed so far: a mark to look for later events from.
    var count: Int { events().count }

    /// The first event at index `start` or later that `condition` accepts, waiting for it up to
    /// `limit` seconds (a guard against hangs, not a timing assertion). Throws, with every event
    /// seen and the watcher's stderr, when none comes.
    @discardableResult
    func waitFor(
        _ what: String, from start: Int = 0, within limit: Double = 30, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: (WatchEvent) -> Bool
    ) async throws -> (index: Int, event: WatchEvent) {
        var found: (Int, WatchEvent)?
        _ = await eventually(within: limit) {
            let all = events(sourceLocation: sourceLocation)
            if start < all.count, let i = all[start...].firstIndex(where: condition) { found = (i, all[i]) }
            return found != nil || !process.isRunning
        }
        guard let found else {
            throw NamespacePair.Failure("""
                the watcher (baton \(arguments.joined(separator: " ")) in \(namespace)) \
                \(process.isRunning ? "did not print \(what) within \(Int(limit)) s" : "exited with \(process.exit.value ?? -1)"); \
                it printed:
                \(transcript)
                """)
        }
        return found
    }

    /// What it wrote to stderr so far (its log).
    var log: String { NamespacedAgent.read(stderr) }

    /// Everything it printed, for failure messages.
    var transcript: String {
        "--- stdout ---\n\(NamespacedAgent.read(stdout))--- stderr ---\n\(NamespacedAgent.read(stderr))---"
    }
}

/// A script (python) running in a namespace.
struct ScriptProcess: Sendable {
    let process: ChildProcess
    let stdout: String
    let stderr: String

    var output: String { NamespacedAgent.read(stdout) }

    /// Waits (at most `limit` seconds) until its stdout holds a line `condition` accepts; that
    /// line. Throws with its output otherwise.
    @discardableResult
    func waitForLine(_ what: String, within limit: Double = 30, _ condition: (String) -> Bool) async throws -> String {
        var found: String?
        _ = await eventually(within: limit) {
            found = output.split(separator: "\n").map(String.init).first(where: condition)
            return found != nil || !process.isRunning
        }
        guard let found else {
            throw NamespacePair.Failure("""
                the script \(process.isRunning ? "did not print \(what) within \(Int(limit)) s" : "exited with \(process.exit.value ?? -1)"); \
                stdout:
                \(output)
                stderr:
                \(NamespacedAgent.read(stderr))
                """)
        }
        return found
    }
}
