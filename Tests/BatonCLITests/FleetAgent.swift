import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real `baton agent --insecure --no-mdns` child process on loopback, for the tests that need
/// a fleet of devices (BatchFleetTests). Started with posix_spawn (standard input /dev/null,
/// standard output and error to files, no other descriptor of the test inherited, so a test's
/// pipes close when their own child ends) and reaped by a thread of its own.
final class FleetAgent: @unchecked Sendable {
    let pid: pid_t
    /// The port it listens on (known once ``start`` returns).
    private(set) var port: Int
    /// Where its standard error (the log) goes.
    let logPath: String
    private let lock = NSLock()
    private var status: Int32?

    /// How long an agent may take to print its `listening on` line, and to exit after SIGKILL.
    static let startLimit: Double = 30
    static let stopLimit: Double = 15

    private init(pid: pid_t, port: Int, logPath: String) {
        self.pid = pid
        self.port = port
        self.logPath = logPath
    }

    var address: String { "127.0.0.1:\(port)" }

    /// Starts `baton agent --config CONFIG --listen 127.0.0.1:PORT` (port 0: any) in
    /// `directory`, whose `xdg` folder is its XDG_CONFIG_HOME, and waits for it to listen. `tag`
    /// names its output files (`tag.out`, `tag.err`), so a restart keeps the first run's.
    static func start(config: String, port: Int = 0, directory: URL, tag: String) async throws -> FleetAgent {
        let baton = try BatonProcess.executable.get().path
        let out = directory.appendingPathComponent("\(tag).out").path, err = directory.appendingPathComponent("\(tag).err").path
        let xdg = directory.appendingPathComponent("xdg").path
        try FileManager.default.createDirectory(atPath: xdg, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = xdg
        let pid = try spawn(
            baton, ["agent", "--config", config, "--listen", "127.0.0.1:\(port)", "--insecure", "--no-mdns"],
            environment: environment, stdout: out, stderr: err)
        let agent = FleetAgent(pid: pid, port: port, logPath: err)
        agent.reap()
        let started = Date()
        let pattern = #/listening on 127\.0\.0\.1:([0-9]+) id=.*/#
        while true {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                guard let m = String(line).wholeMatch(of: pattern), let bound = Int(m.1) else {
                    agent.kill()
                    throw FleetFailure("unexpected first line from the agent: \(line)")
                }
                agent.port = bound
                return agent
            }
            if let code = agent.exitStatus {
                throw FleetFailure("the agent exited with \(code) before listening; its log:\n\(agent.log)")
            }
            if Date().timeIntervalSince(started) > startLimit {
                agent.kill()
                throw FleetFailure("the agent did not listen within \(Int(startLimit)) s; its log:\n\(agent.log)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The exit code (128 + n for signal n), once it has ended.
    var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return status
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits (up to ``stopLimit``) for the process to end; whether it did.
    @discardableResult
    func kill(_ signal: Int32 = SIGKILL) -> Bool {
        if exitStatus == nil { deliver(signal, to: pid) }
        let deadline = Date().addingTimeInterval(Self.stopLimit)
        while exitStatus == nil {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    private func reap() {
        let child = pid
        Thread { [self] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
            let signal = raw & 0x7f
            lock.lock()
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            lock.unlock()
        }.start()
    }

    private static func spawn(_ executable: String, _ arguments: [String], environment: [String: String], stdout: String, stderr: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
        // glibc's closefrom action (2.34), which Swift does not import: the agent must not hold
        // the pipes of a `baton` the test runs at the same time.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw FleetFailure("cannot start \(executable): \(String(cString: strerror(rc)))") }
        return pid
    }
}

/// kill(2), for a type with a `kill` of its own.
private func deliver(_ signal: Int32, to pid: pid_t) {
    _ = kill(pid, signal)
}

struct FleetFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls until `path` exists or `limit` seconds have passed (a guard against hangs, not a
/// timing assertion); whether it appeared.
func waitForFile(_ path: String, within limit: Double) async -> Bool {
    let deadline = Date().addingTimeInterval(limit)
    while !FileManager.default.fileExists(atPath: path) {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}
