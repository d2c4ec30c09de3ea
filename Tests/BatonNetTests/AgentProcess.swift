import BatonClient
import BatonCore
import Foundation
import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The loop every test's `BatonClient` runs on; never shut down (the test process ends).
let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)

/// A client on the shared group, of `account` (the shared test account by default). The
/// connect timeout leaves room for TLS handshakes on a machine busy with many agents.
func makeClient(connectTimeout: TimeAmount = .seconds(10), account: TestAccount = .shared) -> BatonClient {
    var options = BatonClient.Options()
    options.connectTimeout = connectTimeout
    options.security = account.security
    options.deviceName = "baton-net-tests"
    return BatonClient(eventLoop: clientGroup.next(), options: options)
}

/// The `baton` executable: `$BATON_BIN`, or the `baton` next to the test bundle.
enum BatonBinary {
    static let url: Result<URL, NotFound> = locate()

    struct NotFound: Error, CustomStringConvertible {
        var description: String
    }

    static func get() throws -> URL { try url.get() }

    private static func locate() -> Result<URL, NotFound> {
        let fm = FileManager.default
        if let path = ProcessInfo.processInfo.environment["BATON_BIN"], !path.isEmpty {
            guard fm.isExecutableFile(atPath: path) else {
                return .failure(NotFound(description: "BATON_BIN is \(path), which is not an executable file"))
            }
            return .success(URL(fileURLWithPath: path))
        }
        let me = (try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments.first.map { URL(fileURLWithPath: $0).standardizedFileURL.path } ?? ""
        var dir = URL(fileURLWithPath: me).deletingLastPathComponent().standardizedFileURL
        var searched: [String] = []
        while searched.count < 8 {
            let candidate = dir.appendingPathComponent("baton").path
            searched.append(candidate)
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
               fm.isExecutableFile(atPath: candidate)
            {
                return .success(URL(fileURLWithPath: candidate))
            }
            let parent = dir.deletingLastPathComponent().standardizedFileURL
            if parent.path == dir.path { break }
            dir = parent
        }
        return .failure(NotFound(description: """
            cannot find the baton executable: set BATON_BIN, or build it next to the tests \
            (swift build --product baton); looked at \(searched.joined(separator: ", "))
            """))
    }
}

/// A fresh directory under the system's temporary directory, removed when released.
final class TemporaryDirectory: Sendable {
    let url: URL
    var path: String { url.path }

    init(_ prefix: String = "baton-net-tests") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` inside the directory.
    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }

    /// The contents of `name`, or nil if it does not exist (yet).
    func read(_ name: String) -> String? {
        (try? Data(contentsOf: url.appendingPathComponent(name))).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// When a child process ended, shared between Foundation's termination handler and the tests.
final class ExitStatus: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    func set(_ value: Int32) {
        lock.lock()
        status = value
        let resume = waiters
        waiters = []
        lock.unlock()
        for waiter in resume { waiter.resume(returning: value) }
    }

    var value: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return status
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let status {
                lock.unlock()
                continuation.resume(returning: status)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    /// The exit code, or nil if the process has not ended within `limit` seconds.
    func wait(within limit: Double) async -> Int32? {
        let once = Once()
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
            Task {
                let code = await wait()
                if once.claim() { continuation.resume(returning: code) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) {
                if once.claim() { continuation.resume(returning: nil) }
            }
        }
    }
}

/// A child process started with posix_spawn and reaped by a thread of its own with waitpid,
/// so nothing depends on a run loop or a SIGCHLD handler. Standard input is /dev/null;
/// standard output and error go to files; no other descriptor of the test leaks into it.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    let exit = ExitStatus()

    init(_ executable: String, _ arguments: [String], environment: [String: String], directory: String? = nil, stdout: String, stderr: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o644)
        // glibc's closefrom and chdir actions (2.34, 2.29), which Swift does not import.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        if let directory, let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") {
            _ = unsafeBitCast(symbol, to: ChangeDirectory.self)(&actions, directory)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw AgentFailure("cannot start \(executable): \(String(cString: strerror(rc)))") }
        self.pid = pid
        let exit = self.exit
        let child = pid
        Thread {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
            let signal = status & 0x7f
            exit.set(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        }.start()
    }

    var isRunning: Bool { exit.value == nil }

    func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// The environment of this process with `changes` applied.
    static func environment(_ changes: [String: String]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(changes) { _, new in new }
    }
}

/// A real `baton agent --config FILE --listen 127.0.0.1:0` child process.
final class AgentProcess: @unchecked Sendable {
    /// Holds the configuration, the agent's XDG_CONFIG_HOME, its stdout and its stderr, and
    /// whatever the test's handlers and providers write.
    let directory: TemporaryDirectory
    let address: DeviceAddress
    /// From the `listening on` line.
    let id: String
    let name: String
    let pid: pid_t
    private let process: ChildProcess
    private var exit: ExitStatus { process.exit }

    /// How long an agent may take to say `listening on`.
    static let startLimit: Double = 15

    private init(directory: TemporaryDirectory, address: DeviceAddress, id: String, name: String, process: ChildProcess) {
        self.directory = directory
        self.address = address
        self.id = id
        self.name = name
        self.process = process
        self.pid = process.pid
    }

    /// Starts an agent whose configuration is `config`, with every `@DIR@` replaced by the
    /// agent's directory. `directory` lets a second agent share the first one's files. The
    /// agent is a device of `account` (nil: a stranger, with an account of its own), whose
    /// XDG_CONFIG_HOME is `directory`/xdg; or, given `home`, the device whose XDG_CONFIG_HOME
    /// that is (an account's holder, which answers its invite codes).
    static func start(
        config: String, arguments: [String] = [], directory: TemporaryDirectory? = nil, account: TestAccount? = .shared,
        home: String? = nil, wrapper: [String] = []
    ) async throws -> AgentProcess {
        let directory = try directory ?? TemporaryDirectory()
        let tag = UUID().uuidString.prefix(8)
        let configName = "agent-\(tag).lua", stdoutName = "agent-\(tag).out", stderrName = "agent-\(tag).err"
        try directory.write(configName, config.replacingOccurrences(of: "@DIR@", with: directory.path))
        let xdg = home.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? directory.url.appendingPathComponent("xdg", isDirectory: true)
        if home == nil, !FileManager.default.fileExists(atPath: xdg.path) {
            try FileManager.default.createDirectory(at: xdg, withIntermediateDirectories: true)
            try account?.enrol(xdg: xdg.path)
        }

        // A wrapper (unshare, say) execs the agent in the end, so its pid is the agent's.
        let command = wrapper + [try BatonBinary.get().path, "agent", "--config", directory.file(configName), "--listen", "127.0.0.1:0"] + arguments
        let process = try ChildProcess(
            command[0], Array(command.dropFirst()),
            environment: ChildProcess.environment(["XDG_CONFIG_HOME": xdg.path]),
            directory: directory.path, stdout: directory.file(stdoutName), stderr: directory.file(stderrName))
        let exit = process.exit

        let started = Date()
        let pattern = #/listening on 127\.0\.0\.1:([0-9]+) id=(\S+) name="(.*)"/#
        while true {
            if let out = directory.read(stdoutName), let line = out.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                guard let m = String(line).wholeMatch(of: pattern), let port = Int(m.1) else {
                    process.signal(SIGKILL)
                    throw AgentFailure("unexpected first line from the agent: \(line)")
                }
                return AgentProcess(
                    directory: directory, address: DeviceAddress(host: "127.0.0.1", port: port),
                    id: String(m.2), name: String(m.3), process: process)
            }
            if let code = exit.value {
                throw AgentFailure("the agent exited with \(code) before listening; stderr:\n\(directory.read(stderrName) ?? "")")
            }
            if Date().timeIntervalSince(started) > startLimit {
                process.signal(SIGKILL)
                throw AgentFailure("the agent did not print 'listening on' within \(Int(startLimit)) s; stderr:\n\(directory.read(stderrName) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Whether the process is still running.
    var isRunning: Bool { exit.value == nil }

    /// Sends `signal` (once running) without waiting.
    func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// How long an agent may take to exit after a signal before the test kills it.
    static let stopLimit: Double = 15

    /// Sends `signal` and waits for the process to end; its exit code (128 + n for signal n).
    /// An agent still running after ``stopLimit`` seconds is killed, and the test fails.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM, sourceLocation: SourceLocation = #_sourceLocation) async -> Int32 {
        self.signal(signal)
        return await waitForExit(sourceLocation: sourceLocation)
    }

    /// Waits for the process to end (after a signal sent earlier); as ``stop(_:)``.
    func waitForExit(sourceLocation: SourceLocation = #_sourceLocation) async -> Int32 {
        if let code = await exit.wait(within: Self.stopLimit) { return code }
        Issue.record("the agent (pid \(pid)) was still running \(Int(Self.stopLimit)) s after being told to stop; killed. Its log:\n\(log)", sourceLocation: sourceLocation)
        kill(pid, SIGKILL)
        return await exit.wait(within: Self.stopLimit) ?? -1
    }

    /// What the agent wrote to stderr so far (its log).
    var log: String {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".err") }.sorted().compactMap { directory.read($0) }.joined(separator: "\n")
    }
}

struct AgentFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a fresh agent, then stops it with SIGTERM (unless the test already
/// stopped it) and checks that it shut down cleanly.
func withAgent<T>(
    _ config: String = Fixtures.config, arguments: [String] = [], account: TestAccount? = .shared,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (AgentProcess) async throws -> T
) async throws -> T {
    let agent = try await AgentProcess.start(config: config, arguments: arguments, account: account)
    let result: T
    do {
        result = try await body(agent)
    } catch {
        await agent.stop(SIGKILL)
        throw error
    }
    if agent.isRunning {
        let code = await agent.stop(SIGTERM)
        #expect(code == 0, "the agent did not shut down cleanly; its log:\n\(agent.log)", sourceLocation: sourceLocation)
    }
    return result
}

/// Polls `condition` until it holds or `limit` seconds have passed (a guard against hangs, not
/// a timing assertion); whether it held.
/// Asks the fixtures' `closed` service what the agent's `on_closed` recorded for the channel
/// tagged `tag`, until it is no longer "open"; the last answer.
func recordedClose(_ tag: String, _ client: BatonClient, _ agent: AgentProcess) async -> Value? {
    var seen: Value?
    _ = await eventually {
        let reply = try? await client.send(["tag": .string(tag)], to: "closed", app: Fixtures.services, on: agent.address).get()
        seen = reply?.message?["status"]
        return seen != nil && seen != .string("open")
    }
    return seen
}

func eventually(within limit: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let start = Date()
    while true {
        if try await condition() { return true }
        if Date().timeIntervalSince(start) > limit { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// The first element of `stream`, or nil if none comes within `limit` seconds.
func first<T: Sendable>(of stream: AsyncStream<T>, within limit: Double = 10) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(limit))
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// The result of `future`, or nil if it does not complete within `limit` seconds. (Not a
/// task group: waiting on a future cannot be cancelled, and a group waits for its children.)
func result<T: Sendable>(of future: EventLoopFuture<T>, within limit: Double = 10) async -> Result<T, any Error>? {
    let once = Once()
    return await withCheckedContinuation { continuation in
        future.whenComplete { result in
            if once.claim() { continuation.resume(returning: result) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) {
            if once.claim() { continuation.resume(returning: nil) }
        }
    }
}

/// True for the first caller of ``claim()`` only.
final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = false

    func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if claimed { return false }
        claimed = true
        return true
    }
}

/// A TCP port on 127.0.0.1 that refuses connections: bound but not listening, so the kernel
/// hands it to no one else (an agent started at the same time with port 0) until ``close()``.
final class ClosedPort: @unchecked Sendable {
    let port: Int
    private var fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            closeDescriptor(fd)
            throw AgentFailure("bind: \(errno)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    var device: DeviceAddress { DeviceAddress(host: "127.0.0.1", port: port) }

    func close() {
        if fd >= 0 { closeDescriptor(fd) }
        fd = -1
    }

    deinit { close() }
}

/// close(2), for types that have a `close()` of their own.
func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}
