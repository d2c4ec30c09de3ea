import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How the tests' own MQTT clients (`mosquitto_pub`, `mosquitto_sub`, a capture) reach a TLS
/// broker: its CA and, for a broker that requires one, a client certificate and key (PEM files).
struct MQTTClientTLS: Sendable {
    var cafile: String
    var cert: String?
    var key: String?
    /// Skips the check of the broker certificate's name against the host (`--insecure`).
    var insecure = false

    /// The `mosquitto_pub`/`mosquitto_sub` options that say so.
    var arguments: [String] {
        ["--cafile", cafile] + (cert.map { ["--cert", $0] } ?? []) + (key.map { ["--key", $0] } ?? [])
            + (insecure ? ["--insecure"] : [])
    }
}

/// A `mosquitto -c FILE` running in a ``BrokerNetwork``'s hub on ``host``:``port``. Each run
/// logs (stdout and stderr, where mosquitto logs by default) to a file of its own.
final class MosquittoInstance: @unchecked Sendable {
    /// The name it was started with (`home`, `cloud`, ...), in its files' names.
    let name: String
    let host: String
    let port: Int
    /// The configuration file every run reads.
    let configPath: String
    /// Its own directory (`@DIR@` in a configuration): owned by the `mosquitto` user, so a
    /// broker that dropped to it can keep its persistence file there.
    let directory: String
    /// How the tests' clients reach it: nil for plain TCP.
    let clientTLS: MQTTClientTLS?

    private let network: BrokerNetwork
    private let lock = NSLock()
    private var process: ChildProcess?
    private var logs: [String] = []

    /// Execs argv[1...] with no signal blocked and SIGTERM, SIGINT, SIGHUP, SIGPIPE at their defaults.
    private static let defaultSignals = """
        import os, signal, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(s, signal.SIG_DFL)
        os.execvp(sys.argv[1], sys.argv[1:])
        """

    /// How long a start may take until the port accepts, and a stop until the process ends.
    static let limit: Double = 15

    init(name: String, host: String, port: Int, configPath: String, directory: String, clientTLS: MQTTClientTLS?, network: BrokerNetwork) {
        self.name = name
        self.host = host
        self.port = port
        self.configPath = configPath
        self.directory = directory
        self.clientTLS = clientTLS
        self.network = network
    }

    /// `mqtt://HOST:PORT`, or `mqtts://` for a broker reached over TLS.
    var url: String { "\(clientTLS == nil ? "mqtt" : "mqtts")://\(host):\(port)" }

    /// The current (last) run's process id, 0 before the first.
    var pid: pid_t { lock.withLock { process?.pid ?? 0 } }

    var isRunning: Bool { lock.withLock { process }?.isRunning ?? false }

    /// The current (last) run's log file.
    var logPath: String { lock.withLock { logs.last ?? "" } }

    /// Every run's log, in order.
    var log: String {
        lock.withLock { logs }.map { NamespacedAgent.read($0) }.joined(separator: "--- restarted ---\n")
    }

    /// The options `mosquitto_pub`/`mosquitto_sub` need to reach it (`-h`, `-p`, TLS).
    var clientArguments: [String] { ["-h", host, "-p", String(port)] + (clientTLS?.arguments ?? []) }

    /// Starts a run and returns once the port accepts a TCP connection from the hub; throws
    /// with mosquitto's own log if it exits first or the port does not accept within ``limit``.
    func start() async throws {
        let run = lock.withLock { logs.count + 1 }
        let logFile = network.directory.file("mosquitto-\(name)-\(run).log")
        // The test process's threads block (or ignore) SIGTERM and posix_spawn passes that on;
        // mosquitto would never see one. A python exec with every signal unblocked and at its
        // default keeps the process id mosquitto's own.
        let child = try network.spawner.spawn(
            in: network.hub, "python3", ["-c", Self.defaultSignals, "mosquitto", "-c", configPath], stdout: logFile, stderr: logFile)
        lock.withLock {
            process = child
            logs.append(logFile)
        }
        let probe = try network.spawner.spawn(
            in: network.hub, "python3", ["-c", BrokerNetwork.connectScript, host, String(port), String(Self.limit)],
            stdout: network.directory.file("probe-\(name)-\(run).out"), stderr: network.directory.file("probe-\(name)-\(run).err"))
        let deadline = Date().addingTimeInterval(Self.limit + 5)
        while Date() < deadline {
            if let code = child.exit.value {
                probe.signal(SIGKILL)
                throw NamespacePair.Failure("mosquitto \(name) (\(configPath)) exited with \(code) before accepting on port \(port); its log:\n\(log)")
            }
            if let code = probe.exit.value {
                guard code == 0 else { break }
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        probe.signal(SIGKILL)
        child.signal(SIGKILL)
        throw NamespacePair.Failure("mosquitto \(name) did not accept on \(host):\(port) within \(Int(Self.limit)) s; its log:\n\(log)")
    }

    /// Sends `signal` and waits for the process to end; its exit code (128 + n for signal n),
    /// nil if it was not running, or did not end within ``limit`` (it is killed then).
    @discardableResult
    func stop(signal: Int32 = SIGTERM) async -> Int32? {
        guard let process = lock.withLock({ process }), process.isRunning else { return nil }
        process.signal(signal)
        if let code = await process.exit.wait(within: Self.limit) { return code }
        process.signal(SIGKILL)
        _ = await process.exit.wait(within: 5)
        return nil
    }

    /// Stops it (SIGTERM) if it runs, then starts it again with the same configuration, so on
    /// the same port; returns once the port accepts.
    func restart() async throws {
        await stop()
        try await start()
    }
}
