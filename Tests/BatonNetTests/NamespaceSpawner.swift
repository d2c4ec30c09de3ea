import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Starts processes inside network namespaces with `ip netns exec` and remembers them, so the
/// topology that owns it (``NamespacePair``, ``BrokerNetwork``) can kill what is left running
/// when its test ends. Output goes to files of ``directory``.
final class NamespaceSpawner: @unchecked Sendable {
    /// Holds every process's files: agents' homes, watchers' output, scripts.
    let directory: TemporaryDirectory
    /// The address other hosts reach `namespace` at, as an agent listening there reports it.
    private let address: @Sendable (String) -> String

    private let lock = NSLock()
    private var children: [ChildProcess] = []

    init(directory: TemporaryDirectory, address: @escaping @Sendable (String) -> String) {
        self.directory = directory
        self.address = address
    }

    /// Kills (SIGKILL) every process started here that is still running and waits for them
    /// (10 s each at most).
    func killAll() async {
        let running = lock.withLock { children }.filter(\.isRunning)
        for child in running { child.signal(SIGKILL) }
        for child in running { _ = await child.exit.wait(within: 10) }
    }

    /// Starts `executable ARGS` inside `namespace` with `ip netns exec` (which execs it, so the
    /// process id is the program's own); stdout and stderr go to the files given.
    func spawn(
        in namespace: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        stdout: String, stderr: String
    ) throws -> ChildProcess {
        let child = try ChildProcess(
            NamespacePair.ip, ["netns", "exec", namespace, executable] + arguments,
            environment: ChildProcess.environment(environment), directory: directory.path, stdout: stdout, stderr: stderr)
        lock.withLock { children.append(child) }
        return child
    }

    /// Runs `executable ARGS` inside `namespace` to completion, killed after `limit` seconds
    /// (the result then says 128 + SIGKILL, or -1 if it did not even die). Output goes to files
    /// named `prefix-TAG.out` and `.err`.
    func run(
        in namespace: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:],
        prefix: String, limit: Double = 30
    ) async throws -> CLIResult {
        let tag = Self.tag()
        let process = try spawn(
            in: namespace, executable, arguments, environment: environment,
            stdout: directory.file("\(prefix)-\(tag).out"), stderr: directory.file("\(prefix)-\(tag).err"))
        var code = await process.exit.wait(within: limit)
        if code == nil {
            process.signal(SIGKILL)
            code = await process.exit.wait(within: 5)
        }
        return CLIResult(
            code: code ?? -1, stdout: directory.read("\(prefix)-\(tag).out") ?? "",
            stderr: directory.read("\(prefix)-\(tag).err") ?? "")
    }

    /// Runs `baton ARGS` inside `namespace` to completion, as the holder of the shared test account (or
    /// with `xdg` as its XDG_CONFIG_HOME), killed after 30 s, which fails the test.
    func baton(
        in namespace: String, _ arguments: [String], xdg: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CLIResult {
        let xdg = xdg ?? TestAccount.shared.home.path
        let result = try await run(
            in: namespace, try BatonBinary.get().path, arguments, environment: ["XDG_CONFIG_HOME": xdg], prefix: "cli")
        if result.code == -1 || result.code == 128 + SIGKILL {
            Issue.record("baton \(arguments.joined(separator: " ")) in \(namespace) was still running after 30 s\n\(result)", sourceLocation: sourceLocation)
        }
        return result
    }

    /// Starts `baton agent --listen 0.0.0.0:0` in `namespace`, as a user would on a LAN, with
    /// `home` as its XDG_CONFIG_HOME (a new one, so a new device id, unless given) and
    /// `config` (`@DIR@` replaced by the home's path) as its configuration; returns once it
    /// listens.
    func agent(
        in namespace: String, name: String? = nil, kind: String? = nil, config: String? = nil,
        arguments: [String] = [], home: AgentHome? = nil
    ) async throws -> NamespacedAgent {
        let home = try home ?? AgentHome(in: directory)
        var args = ["agent", "--listen", "0.0.0.0:0", "--log-format", "json"]
        if let name { args += ["--name", name] }
        if let kind { args += ["--kind", kind] }
        if let config {
            let file = home.path + "/agent-\(Self.tag()).lua"
            try Data(config.replacingOccurrences(of: "@DIR@", with: home.path).utf8).write(to: URL(fileURLWithPath: file))
            args += ["--config", file]
        }
        args += arguments
        let tag = Self.tag()
        let stdout = home.path + "/agent-\(tag).out", stderr = home.path + "/agent-\(tag).err"
        let process = try spawn(
            in: namespace, try BatonBinary.get().path, args, environment: ["XDG_CONFIG_HOME": home.path + "/xdg"],
            stdout: stdout, stderr: stderr)
        let started = Date()
        let pattern = #/listening on 0\.0\.0\.0:([0-9]+) id=(\S+) name="(.*)"/#
        while true {
            let out = (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? ""
            if let line = out.split(separator: "\n").first {
                guard let m = String(line).wholeMatch(of: pattern), let port = Int(m.1) else {
                    process.signal(SIGKILL)
                    throw NamespacePair.Failure("unexpected first line from the agent: \(line)")
                }
                return NamespacedAgent(
                    namespace: namespace, host: address(namespace), port: port, id: String(m.2), name: String(m.3),
                    home: home, process: process, stderr: stderr)
            }
            if let code = process.exit.value {
                throw NamespacePair.Failure("the agent exited with \(code) before listening; stderr:\n\(NamespacedAgent.read(stderr))")
            }
            if Date().timeIntervalSince(started) > 20 {
                process.signal(SIGKILL)
                throw NamespacePair.Failure("the agent did not print 'listening on' within 20 s; stderr:\n\(NamespacedAgent.read(stderr))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts `baton devices --watch --json ARGS` in `namespace`, as the holder of the shared
    /// test account (or with `xdg` as its XDG_CONFIG_HOME).
    func watcher(in namespace: String, _ arguments: [String] = [], xdg: String? = nil) throws -> DeviceWatcher {
        let tag = Self.tag()
        let xdg = xdg ?? TestAccount.shared.home.path
        let stdout = directory.file("watch-\(tag).out"), stderr = directory.file("watch-\(tag).err")
        let all = ["devices", "--watch", "--json"] + arguments
        let process = try spawn(
            in: namespace, try BatonBinary.get().path, all, environment: ["XDG_CONFIG_HOME": xdg],
            stdout: stdout, stderr: stderr)
        return DeviceWatcher(namespace: namespace, arguments: all, process: process, stdout: stdout, stderr: stderr)
    }

    /// Starts `python3 -c SCRIPT ARGS` in `namespace` (python-zeroconf is installed in CI).
    func python(in namespace: String, _ script: String, _ arguments: [String] = []) throws -> ScriptProcess {
        let tag = Self.tag()
        let stdout = directory.file("py-\(tag).out"), stderr = directory.file("py-\(tag).err")
        let process = try spawn(in: namespace, "python3", ["-c", script] + arguments, stdout: stdout, stderr: stderr)
        return ScriptProcess(process: process, stdout: stdout, stderr: stderr)
    }

    static func tag() -> String { String(UUID().uuidString.prefix(8)) }
}
