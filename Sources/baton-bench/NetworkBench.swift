// The network figures: each measured against a real `baton agent` process on loopback.
import BatonClient
import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import CLuaShim
import Foundation
import Logging
import NIOCore
import NIOPosix

/// A `baton agent` child process with an echo service and a Lua launch function: plaintext on
/// loopback (`--insecure`), or mutual TLS with an account of its own folder.
final class AgentProcess {
    let process = Process()
    let address: DeviceAddress
    let folder: URL
    /// Whether the folder is this process's to delete when it stops (not a `home` given).
    private let ownsFolder: Bool

    /// `home`: the XDG_CONFIG_HOME to run in (kept when it stops), a fresh one by default.
    init(baton: String, insecure: Bool, arguments: [String] = [], config text: String? = nil, home: URL? = nil) throws {
        folder = home ?? FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-\(UUID().uuidString)")
        ownsFolder = home == nil
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("agent.lua")
        try (text ?? """
            device{ name = "Bench", kind = "desktop" }
            app{ id = "bench", schemes = {"bench"}, launch = function(uri, data) return "success" end,
                 services = { echo = function(msg) return msg end, idle = function() return {} end } }
            """).write(to: config, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: baton)
        process.arguments = ["agent", "--config", config.path, "--listen", "127.0.0.1:0", "-q", "--max-message", "16M", "--no-mdns"]
            + (insecure ? ["--insecure"] : []) + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = folder.path
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("the agent exited before it was ready") }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: #"127\.0\.0\.1:\d+"#, options: .regularExpression),
              let address = DeviceAddress(String(text[range])) else { throw BenchError("unexpected ready line: \(text)") }
        self.address = address
    }

    /// Connections as a device of the agent's own account (the agent made it on first use).
    func clientSecurity() throws -> ConnectionSecurity {
        let folder = ConfigurationFolder(path: self.folder.appendingPathComponent("baton").path)
        guard let credentials = try DeviceCredentials.load(from: folder) else { throw BenchError("the agent made no account") }
        return try .tls(credentials: credentials, in: folder)
    }

    /// The agent's resident memory, in bytes.
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// SIGTERM, then SIGKILL if the agent has not gone within 5 s (and says so).
    func stop() {
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var waited = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if waited >= 500 {
                FileHandle.standardError.write(Data("bench: the agent did not stop on SIGTERM within 5 s; killing it\n".utf8))
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
            waited += 1
        }
        if ownsFolder { try? FileManager.default.removeItem(at: folder) }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

/// Drives requests on one channel from the client's loop; state is confined to that loop.
final class RequestDriver: @unchecked Sendable {
    let channel: AppServiceConnection
    let message: ValueDictionary
    let loop: any EventLoop
    var times: [Double] = []
    var sent = 0, done = 0, total = 0
    var started: Int64 = 0

    init(channel: AppServiceConnection, message: ValueDictionary, loop: any EventLoop) {
        self.channel = channel
        self.message = message
        self.loop = loop
    }

    /// Opens the bench agent's echo service at `address` with `client` (on `loop`) and drives
    /// `message` on it.
    static func echo(_ client: BatonClient, at address: DeviceAddress, message: ValueDictionary, loop: any EventLoop) throws -> RequestDriver {
        let (opened, status, detail) = try client.openService("echo", app: "bench", on: address).wait()
        guard let channel = opened else { throw BenchError("open echo at \(address): \(status) \(detail)") }
        return RequestDriver(channel: channel, message: message, loop: loop)
    }

    /// `count` sequential round trips after a tenth as many to warm up, in µs, sorted.
    func measuredRoundTrips(_ count: Int) throws -> [Double] {
        _ = try roundTrips(count / 10)
        return try roundTrips(count).sorted()
    }

    /// Sequential round trips, in µs.
    func roundTrips(_ count: Int) throws -> [Double] {
        let promise = loop.makePromise(of: [Double].self)
        times = []
        times.reserveCapacity(count)
        loop.execute { self.next(count, promise) }
        return try promise.futureResult.wait()
    }

    private func next(_ count: Int, _ promise: EventLoopPromise<[Double]>) {
        guard times.count < count else { return promise.succeed(times) }
        let start = baton_monotonic_ns()
        channel.send(message).whenComplete { result in
            guard case .success(let reply) = result, reply.status == .success else {
                return promise.fail(BenchError("echo failed: \(result)"))
            }
            self.times.append(Double(baton_monotonic_ns() - start) / 1000)
            self.next(count, promise)
        }
    }

    /// `total` requests with `window` in flight; messages per second.
    func pipelined(total: Int, window: Int) throws -> Double {
        let promise = loop.makePromise(of: Double.self)
        self.total = total
        sent = 0
        done = 0
        loop.execute {
            self.started = baton_monotonic_ns()
            for _ in 0..<min(window, total) { self.send(promise) }
        }
        return try promise.futureResult.wait()
    }

    private func send(_ promise: EventLoopPromise<Double>) {
        sent += 1
        channel.send(message).whenComplete { _ in
            self.done += 1
            if self.done == self.total {
                return promise.succeed(Double(self.total) / (Double(baton_monotonic_ns() - self.started) / 1e9))
            }
            if self.sent < self.total { self.send(promise) }
        }
    }
}

/// Reads `n` bytes; `polling`, by asking again at once instead of sleeping until they come.
private func readExactly(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ n: Int, polling: Bool) {
    let flags: Int32 = polling ? Int32(MSG_DONTWAIT) : 0
    var got = 0
    while got < n {
        let r: Int = recv(fd, buffer + got, n - got, flags)
        if r < 0, polling, errno == EAGAIN { continue }
        if r <= 0 { return }
        got += r
    }
}

/// Mutual TLS 1.3: connection setup (TCP, TLS handshake with both certificates checked, Hello)
/// beside plaintext's, and the request/response round trip beside plaintext's p50.
/// `plain` is the plaintext agent the other figures use, the baseline of the setup figure.
func tlsBench(baton: String, plain: DeviceAddress, message: ValueDictionary, plaintextP50: Double, loop: any EventLoop, scale: Int) throws {
    let agent = try AgentProcess(baton: baton, insecure: false)
    defer { agent.stop() }
    let security = try agent.clientSecurity()
    let hello = Hello()
    func setup(_ address: DeviceAddress, _ security: ConnectionSecurity) throws -> Double {
        let start = baton_monotonic_ns()
        let connection = try PeerConnector.connect(
            host: address.host, port: address.port, on: loop, security: security, hello: hello,
            logger: Logger(label: "bench")).wait()
        let elapsed = Double(baton_monotonic_ns() - start) / 1e6
        try loop.submit { connection.goodbye(.unknown, "done") }.wait()
        return elapsed
    }
    for _ in 0..<20 {
        _ = try setup(agent.address, security)
        _ = try setup(plain, .insecure)
    }
    var tls: [Double] = [], plaintext: [Double] = []
    for _ in 0..<(300 / scale) {
        tls.append(try setup(agent.address, security))
        plaintext.append(try setup(plain, .insecure))
    }
    tls.sort()
    plaintext.sort()
    row("TLS 1.3 connection setup (mutual, + Hello): p50", "\(fmt(percentile(tls, 0.5), 2)) ms",
        "plaintext \(fmt(percentile(plaintext, 0.5), 2)) ms", "", nil)

    var options = BatonClient.Options()
    options.security = security
    let client = BatonClient(eventLoop: loop, options: options)
    defer { client.shutdown() }
    let driver = try RequestDriver.echo(client, at: agent.address, message: message, loop: loop)
    let p50 = percentile(try driver.measuredRoundTrips(20000 / scale), 0.5)
    row("request/response over TLS, ~100 B: p50", "\(fmt(p50)) µs",
        "plaintext \(fmt(plaintextP50)) µs (\(fmt(p50 / plaintextP50, 2))×)", "≤ 1.3×", p50 <= 1.3 * plaintextP50)
    let throughput = try driver.pipelined(total: 200_000 / scale, window: 64)
    row("pipelined over TLS, 64 in flight", "\(Int(throughput)) msg/s", "", "", nil)
    driver.channel.close()
}

/// The round trip with busy polling off at both ends (`--busy-poll 0`): every read waits for a
/// sleeping CPU to wake.
func withoutBusyPolling(baton: String, message: ValueDictionary, loop: any EventLoop, scale: Int, raw50: Double) throws {
    let agent = try AgentProcess(baton: baton, insecure: true, arguments: ["--busy-poll", "0"])
    defer { agent.stop() }
    var options = BatonClient.Options()
    options.timing.busyPoll = .zero
    let client = BatonClient(eventLoop: loop, options: options)
    defer { client.shutdown() }
    let driver = try RequestDriver.echo(client, at: agent.address, message: message, loop: loop)
    defer { driver.channel.close() }
    let p50 = percentile(try driver.measuredRoundTrips(20000 / scale), 0.5)
    row("  without busy polling (--busy-poll 0): p50", "\(fmt(p50)) µs", "raw TCP ping-pong \(fmt(raw50)) µs (\(fmt(p50 / raw50))×)", "", nil)
}

/// The raw baseline: a TCP ping-pong of `size` bytes between two threads, with blocking reads
/// or (`polling`) reads that ask again at once, as Baton's busy polling does.
func rawPingPong(size: Int, count: Int, polling: Bool) throws -> [Double] {
    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, length) } }
    listen(server, 1)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(server, $0, &length) } }
    let echo = Thread {
        let fd = accept(server, nil, nil)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        for _ in 0..<count { readExactly(fd, buffer, size, polling: polling); _ = write(fd, buffer, size) }
        close(fd)
    }
    echo.start()
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
    var times: [Double] = []
    for _ in 0..<count {
        let start = baton_monotonic_ns()
        _ = write(client, buffer, size)
        readExactly(client, buffer, size, polling: polling)
        times.append(Double(baton_monotonic_ns() - start) / 1000)
    }
    close(client)
    close(server)
    return times
}

/// Pipelined requests alone, a million of them, for profiling.
func pipelinedBench(baton: String) throws {
    let agent = try AgentProcess(baton: baton, insecure: true)
    defer { agent.stop() }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let driver = try RequestDriver.echo(BatonClient(eventLoop: loop), at: agent.address, message: benchMessage, loop: loop)
    let throughput = try driver.pipelined(total: 1_000_000, window: 64)
    row("pipelined, 1 connection, 64 in flight", "\(Int(throughput)) msg/s", "", "", nil)
    driver.channel.close()
}

/// About 100 bytes on the wire.
let benchMessage: ValueDictionary = [
    "Type": .string("ping"), "TargetId": .string("8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f"),
    "CreationDate": .date(Date()), "position": .double(83.5), "note": .string("a hundred bytes or so"),
]

/// Runs every network figure and prints its rows.
/// `requestsOnly` (profiling runs) stops after the request/response figures; the environment's
/// BATON_BENCH_SCALE (default 1) divides their counts.
func networkBench(baton: String, requestsOnly: Bool = false, tls: Bool = false) throws {
    let scale = requestsOnly ? max(1, Int(ProcessInfo.processInfo.environment["BATON_BENCH_SCALE"] ?? "") ?? 1) : 1
    let agent = try AgentProcess(baton: baton, insecure: true)
    defer { agent.stop() }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    // Plaintext (--insecure) for the figures issue 3 set; TLS's own figures follow beside them.
    let client = BatonClient(eventLoop: loop)
    let message = benchMessage
    let driver = try RequestDriver.echo(client, at: agent.address, message: message, loop: loop)
    let channel = driver.channel
    let rtt = try driver.measuredRoundTrips(20000 / scale)
    let raw = try rawPingPong(size: 100, count: 20000 / scale, polling: false).sorted()
    let rawPolling = try rawPingPong(size: 100, count: 20000 / scale, polling: true).sorted()
    let p50 = percentile(rtt, 0.5), p99 = percentile(rtt, 0.99), raw50 = percentile(raw, 0.5), raw99 = percentile(raw, 0.99)
    row("request/response, loopback, ~100 B: p50", "\(fmt(p50)) µs", "raw TCP ping-pong \(fmt(raw50)) µs (\(fmt(p50 / raw50))×)", "≤ 60 µs, ≤ 3×", p50 <= 60 && p50 <= 3 * raw50)
    row("request/response, loopback, ~100 B: p99", "\(fmt(p99)) µs", "raw TCP ping-pong \(fmt(raw99)) µs", "", nil)
    // Baton polls its sockets for 50 µs after traffic (--busy-poll); so does this raw pair.
    let rawPolling50 = percentile(rawPolling, 0.5)
    row("  raw TCP ping-pong, polling reads: p50", "\(fmt(rawPolling50)) µs", "Baton's p50 is \(fmt(p50 / rawPolling50))× this", "", nil)
    try withoutBusyPolling(baton: baton, message: message, loop: loop, scale: scale, raw50: raw50)

    let throughput = try driver.pipelined(total: 200_000 / scale, window: 64)
    row("pipelined, 1 connection, 64 in flight", "\(Int(throughput)) msg/s", "sequential \(Int(1e6 / p50)) msg/s", "≥ 200000/s", throughput >= 200_000)
    if requestsOnly, !tls {
        channel.close()
        return
    }
    try tlsBench(baton: baton, plain: agent.address, message: message, plaintextP50: p50, loop: loop, scale: scale)
    if requestsOnly {
        channel.close()
        return
    }

    // Launch with a Lua launch function.
    let launchRequest = LaunchRequest(uri: "bench:x", appID: "bench")
    for _ in 0..<500 { _ = try client.launch(launchRequest, on: agent.address).wait() }
    var launches: [Double] = []
    for _ in 0..<3000 {
        let start = baton_monotonic_ns()
        let (status, _) = try client.launch(launchRequest, on: agent.address).wait()
        guard status == .success else { throw BenchError("launch: \(status)") }
        launches.append(Double(baton_monotonic_ns() - start) / 1000)
    }
    launches.sort()
    row("launch round trip (Lua launch function): p50", "\(fmt(percentile(launches, 0.5))) µs", "request/response p50 \(fmt(p50)) µs", "", nil)
    channel.close()

    // Memory per idle open channel, on fresh connections of 1,000 channels each (a connection
    // holds at most 1,024: baton.proto, LIMITS).
    for n in [1000, 10000] {
        let clients = (0..<max(1, n / 1000)).map { _ in BatonClient(eventLoop: loop) }
        for client in clients { _ = try client.describe(agent.address).wait() }
        usleep(200_000)
        let before = agent.residentBytes
        var channels: [AppServiceConnection] = []
        var futures: [EventLoopFuture<(AppServiceConnection?, OpenStatus, String)>] = []
        for i in 0..<n { futures.append(clients[i % clients.count].openService("idle", app: "bench", on: agent.address)) }
        for f in futures { if let c = try f.wait().0 { channels.append(c) } }
        guard channels.count == n else { throw BenchError("opened only \(channels.count) of \(n) channels") }
        usleep(300_000)
        let per = Double(agent.residentBytes - before) / Double(n)
        row("agent memory per idle open channel, \(n) on \(clients.count) connection\(clients.count == 1 ? "" : "s")", "\(fmt(per / 1024, 2)) KiB",
            "agent RSS before \(before / 1024 / 1024) MiB", "≤ 16 KiB", per <= 16 * 1024)
        for c in channels { c.close() }
        for client in clients { client.shutdown() }
    }
}
