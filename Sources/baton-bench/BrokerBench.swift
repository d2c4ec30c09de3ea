// The broker figures (issue 23): request/response through a real mosquitto beside paho-mqtt's
// own MQTT 5 RPC on the same broker, TCP+TLS for scale, kill -9 to a watcher's `removed`, and a
// fleet of simulated agents (presence, one request each, memory, a broker restart).
import BatonBroker
import BatonClient
import BatonCore
import BatonMQTT
import BatonNet
import BatonSecurity
import BatonWire
import CLuaShim
import Foundation
import Logging
import NIOCore
import NIOPosix

/// A mosquitto of the bench's own, on loopback, Nagle off; started again after ``stop()`` by
/// ``start()`` on the same ports.
final class Mosquitto {
    let config: URL
    let ports: [Int]
    private(set) var process: Process?

    init(config text: String, ports: [Int], in folder: URL) throws {
        config = folder.appendingPathComponent("mosquitto.conf")
        self.ports = ports
        try text.write(to: config, atomically: true, encoding: .utf8)
        try start()
    }

    /// Starts it; returns once every port accepts connections (10 s at most).
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        for port in ports {
            while !accepts(port) {
                guard Date() < deadline, process.isRunning else { throw BenchError("mosquitto did not start (\(config.path))") }
                usleep(5_000)
            }
        }
    }

    /// SIGTERM, and waits for it to go.
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    var residentBytes: Int { process.map { residentBytesOf($0.processIdentifier) } ?? 0 }

    private func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// A new folder `name`-PID in memory (/dev/shm) where there is one, else in the temporary
/// folder; the caller removes it.
func benchFolder(_ name: String) throws -> URL {
    let work = URL(fileURLWithPath: FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
        .appendingPathComponent("\(name)-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    return work
}

/// Resident memory of process `pid` (0: this one), in bytes.
func residentBytesOf(_ pid: Int32) -> Int {
    let path = pid == 0 ? "/proc/self/status" : "/proc/\(pid)/status"
    let status = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
}

/// A loopback port nobody listens on now.
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard ok else { throw BenchError("no free loopback port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Runs `baton` with XDG_CONFIG_HOME `home`; its standard output. Throws when it fails.
@discardableResult
func runBaton(_ baton: String, home: URL, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: baton)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_CONFIG_HOME"] = home.path
    process.environment = environment
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("baton \(arguments.joined(separator: " ")): exit \(process.terminationStatus)") }
    return text
}

/// paho-mqtt's MQTT 5 RPC on the same broker (scripts/bench-paho-rpc.py): p50 and p99 in µs.
func pahoRPC(port: Int, count: Int, tls: [String] = []) throws -> (p50: Double, p99: Double) {
    let scripts = ProcessInfo.processInfo.environment["BATON_BENCH_SCRIPTS"] ?? "scripts"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", scripts + "/bench-paho-rpc.py", "127.0.0.1", "\(port)", "--count", "\(count)"] + tls
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
    guard process.terminationStatus == 0, numbers.count == 3 else { throw BenchError("bench-paho-rpc.py: exit \(process.terminationStatus), said '\(text)'") }
    return (numbers[0], numbers[1])
}

/// A device of a bench account, as a client sees it.
struct BenchDevice {
    let security: ConnectionSecurity
    let trustStore: TrustStore
    var id: String { trustStore.credentials.deviceID.lowercased() }
    var account: String { trustStore.credentials.fingerprint.hex }

    /// The device whose XDG_CONFIG_HOME is `home`.
    init(home: URL) throws {
        let folder = ConfigurationFolder(path: home.appendingPathComponent("baton").path)
        guard let credentials = try DeviceCredentials.load(from: folder) else { throw BenchError("no account in \(home.path)") }
        security = try .tls(credentials: credentials, in: folder)
        trustStore = security.trustStore!
    }

    /// A client on `loop` reaching agents through the broker at `url` (and over TCP).
    func client(broker url: String, on loop: any EventLoop, logger: Logger) throws -> (BatonClient, BrokerHub) {
        let trustStore = self.trustStore
        let access = BrokerAccess(settings: try BrokerSettings(url: url), logger: logger, trustStore: { trustStore })
        var options = BatonClient.Options()
        options.security = security
        options.dialers = access.dialers(on: loop)
        guard let hub = try access.hub(on: loop) else { throw BenchError("no broker hub") }
        let client = BatonClient(eventLoop: loop, options: options, logger: logger)
        try waitFor("the client's broker connection", seconds: 10) { try loop.submit { hub.connected }.wait() }
        return (client, hub)
    }

    /// The route to device `id` of this account through the broker.
    func brokerTarget(_ id: String) -> DeviceTarget {
        DeviceTarget(deviceID: id, routes: [.broker(BrokerRoute(account: account, deviceID: id))], account: .ownAccount)
    }
}

/// Polls `done` every 5 ms for up to `seconds`.
func waitFor(_ what: String, seconds: Double, _ done: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try !done() {
        guard Date() < deadline else { throw BenchError("\(what): not within \(Int(seconds)) s") }
        usleep(5_000)
    }
}

/// What a watcher (a ``BrokerDeviceSource``) reported, with when (monotonic ns).
final class WatcherLog: DeviceSourceDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String: Int64] = [:]
    private var keys: [String: String] = [:]
    private var lost: [(id: String, at: Int64)] = []

    func source(_ source: any DeviceSource, sees device: RemoteDevice, as key: String) {
        let id = device.info.id.lowercased()
        lock.withLock {
            keys[key] = id
            if seen[id] == nil { seen[id] = baton_monotonic_ns() }
        }
    }

    func source(_ source: any DeviceSource, lost key: String) {
        lock.withLock {
            let id = keys[key] ?? key
            lost.append((id, baton_monotonic_ns()))
            seen[id] = nil
        }
    }

    func sourceEnumerated(_ source: any DeviceSource) {}
    func source(_ source: any DeviceSource, problem: String) {}

    var seenCount: Int { lock.withLock { seen.count } }
    func sees(_ id: String) -> Bool { lock.withLock { seen[id] != nil } }
    func lostAt(_ id: String) -> Int64? { lock.withLock { lost.first { $0.id == id }?.at } }
    func losses(since: Int64) -> Int { lock.withLock { lost.filter { $0.at >= since }.count } }
    var lastSeen: Int64 { lock.withLock { seen.values.max() ?? 0 } }
}

/// A watcher on its own client: a ``BrokerDeviceSource`` that describes each device through the
/// broker (one request each).
final class BrokerWatcher {
    let client: BatonClient
    let hub: BrokerHub
    let source: BrokerDeviceSource
    let log = WatcherLog()

    init(_ device: BenchDevice, broker url: String, on loop: any EventLoop, logger: Logger) throws {
        let (client, hub) = try device.client(broker: url, on: loop, logger: logger)
        self.client = client
        self.hub = hub
        source = BrokerDeviceSource(hub: hub, logger: logger) { target in
            client.describe(target, timeout: .seconds(60)).map(\.0)
        }
    }

    func start() {
        let (source, log) = (self.source, self.log)
        hub.eventLoop.execute { source.start(reportingTo: log) }
    }

    func stop() {
        _ = try? source.stop().wait()
        client.shutdown()
        _ = try? hub.stop().wait()
    }
}

/// A simulated agent's answers: Hello and describe, nothing else.
final class SimulatedAgent: PeerConnectionDelegate {
    let info: DeviceInfo
    init(info: DeviceInfo) { self.info = info }

    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? { info }

    func connectionDescribe(_ connection: PeerConnection, context: RequestContext) -> EventLoopFuture<DeviceDescription> {
        connection.eventLoop.makeSucceededFuture(DeviceDescription(device: info))
    }
}

/// Opens the bench agent's echo service on `target`, trying again for up to 10 s while the
/// agent's broker connection comes up.
func openEcho(_ client: BatonClient, _ target: DeviceTarget, loop: any EventLoop) throws -> RequestDriver {
    let deadline = Date().addingTimeInterval(10)
    while true {
        let (opened, status, detail) = try client.openService("echo", app: "bench", on: target, timeout: .seconds(5)).wait()
        if let channel = opened { return RequestDriver(channel: channel, message: benchMessage, loop: loop) }
        guard Date() < deadline else { throw BenchError("open echo over \(target): \(status) \(detail)") }
        usleep(100_000)
    }
}

/// Every broker figure, each beside its baseline from this run. BATON_BENCH_FLEET sets the
/// number of simulated agents (1000 by default), BATON_BENCH_BROKER_COUNT the round trips.
func brokerBench(baton: String) throws {
    let environment = ProcessInfo.processInfo.environment
    let fleetSize = Int(environment["BATON_BENCH_FLEET"] ?? "") ?? 1000
    let count = Int(environment["BATON_BENCH_BROKER_COUNT"] ?? "") ?? 2000
    var logger = Logger(label: "bench")
    logger.logLevel = .critical

    let work = try benchFolder("baton-bench-broker")
    defer { try? FileManager.default.removeItem(at: work) }
    // Two devices of one account: A serves (a `baton agent`), B asks (this process).
    let homeA = work.appendingPathComponent("A"), homeB = work.appendingPathComponent("B")
    try runBaton(baton, home: homeA, ["account", "show"])
    let bundle = work.appendingPathComponent("b.json").path
    try runBaton(baton, home: homeA, ["account", "export-device", "B", "--output", bundle])
    try runBaton(baton, home: homeB, ["account", "import", bundle])
    let certificates = work.appendingPathComponent("broker")
    let plainPort = try freeLoopbackPort(), tlsPort = try freeLoopbackPort()
    try runBaton(baton, home: homeA, ["broker", "config", "--host", "127.0.0.1", "--dir", certificates.path, "--port", "\(tlsPort)"])
    // One mosquitto, a plaintext listener and a TLS one with `baton broker config`'s CA and
    // certificate (its ACL left out: paho's topics are not Baton's). Queues unbounded: the
    // fleet's watcher hears a thousand devices at once.
    let mosquitto = try Mosquitto(config: """
        per_listener_settings false
        allow_anonymous true
        persistence false
        user root
        set_tcp_nodelay true
        max_queued_messages 0
        listener \(plainPort) 127.0.0.1
        listener \(tlsPort) 127.0.0.1
        cafile \(certificates.path)/ca.pem
        certfile \(certificates.path)/server.pem
        keyfile \(certificates.path)/server-key.pem
        require_certificate true
        use_identity_as_username true

        """, ports: [plainPort, tlsPort], in: work)
    defer { mosquitto.stop() }
    let plain = "mqtt://127.0.0.1:\(plainPort)", tls = "mqtts://127.0.0.1:\(tlsPort)"
    let deviceA = try BenchDevice(home: homeA), deviceB = try BenchDevice(home: homeB)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let loop = group.next()

    // 1. Plaintext broker: Baton's request/response beside paho's RPC; TCP+TLS for scale.
    var agent = try AgentProcess(baton: baton, insecure: false, arguments: ["--broker", plain], home: homeA)
    var agentStopped = false
    defer { if !agentStopped { agent.stop() } }
    let (client, _) = try deviceB.client(broker: plain, on: loop, logger: logger)
    defer { client.shutdown() }
    // The kill -9 figure's watcher, started now: a will is believed only on a watcher's
    // connection that has lasted 20 s (BrokerDeviceSource's `steady`), and the figure is a
    // watcher's that has been up a while, not one that has just connected.
    let watcher = try BrokerWatcher(deviceB, broker: plain, on: loop, logger: logger)
    watcher.start()
    let watcherStarted = Date()
    let overBroker = try openEcho(client, deviceB.brokerTarget(deviceA.id), loop: loop)
    let rtt = try overBroker.measuredRoundTrips(count)
    overBroker.channel.close()
    let paho = try pahoRPC(port: plainPort, count: count)
    let p50 = percentile(rtt, 0.5), p99 = percentile(rtt, 0.99)
    row("request/response over the broker, mqtt://: p50", "\(fmt(p50 / 1000, 3)) ms",
        "paho MQTT 5 RPC \(fmt(paho.p50 / 1000, 3)) ms (\(fmt(p50 / paho.p50, 2))×)", "≤ paho", p50 <= paho.p50)
    row("request/response over the broker, mqtt://: p99", "\(fmt(p99 / 1000, 3)) ms", "paho \(fmt(paho.p99 / 1000, 3)) ms", "", nil)
    var tcpOptions = BatonClient.Options()
    tcpOptions.security = deviceB.security
    let tcpClient = BatonClient(eventLoop: loop, options: tcpOptions, logger: logger)
    defer { tcpClient.shutdown() }
    let direct = try RequestDriver.echo(tcpClient, at: agent.address, message: benchMessage, loop: loop)
    let directP50 = percentile(try direct.measuredRoundTrips(count * 5), 0.5)
    direct.channel.close()
    row("  the same over TCP+TLS directly: p50", "\(fmt(directP50 / 1000, 3)) ms",
        "the broker's is \(fmt(p50 / directP50))× this", "", nil)

    // 3a. kill -9 of the agent: how long until a watcher says `removed`.
    try waitFor("the watcher to see the agent", seconds: 15) { watcher.log.sees(deviceA.id) }
    let steadyAfter = 21 - Date().timeIntervalSince(watcherStarted)
    if steadyAfter > 0 { usleep(useconds_t(steadyAfter * 1e6)) }
    let killed = baton_monotonic_ns()
    kill(agent.process.processIdentifier, SIGKILL)
    try waitFor("the watcher to say removed", seconds: 90) { watcher.log.lostAt(deviceA.id) != nil }
    let removal = Double(watcher.log.lostAt(deviceA.id)! - killed) / 1e9
    row("kill -9 of an agent → watcher's removed", "\(fmt(removal, 2)) s",
        "will delay \(PresencePublisher.willDelay) s + confirmation 2 s, watcher up 21 s+", "≤ lease \(PresencePublisher.lease) s",
        removal <= Double(PresencePublisher.lease))
    agent.stop()
    agentStopped = true
    watcher.stop()
    // mosquitto keeps the killed agent's session (30 s): a new run of the same device takes it over.

    // 1b. TLS broker (mqtts://), beside paho over the same TLS listener.
    agent = try AgentProcess(baton: baton, insecure: false, arguments: ["--broker", tls], home: homeA)
    agentStopped = false
    let tlsGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? tlsGroup.syncShutdownGracefully() }
    let tlsLoop = tlsGroup.next()
    let (tlsClient, _) = try deviceB.client(broker: tls, on: tlsLoop, logger: logger)
    defer { tlsClient.shutdown() }
    let overTLS = try openEcho(tlsClient, deviceB.brokerTarget(deviceA.id), loop: tlsLoop)
    let tlsP50 = percentile(try overTLS.measuredRoundTrips(count), 0.5)
    overTLS.channel.close()
    let pahoFolder = homeB.appendingPathComponent("baton").path
    let pahoTLS = try pahoRPC(port: tlsPort, count: count, tls: [
        "--cafile", certificates.path + "/ca.pem", "--certfile", pahoFolder + "/device.pem", "--keyfile", pahoFolder + "/device-key.pem",
    ])
    row("request/response over the broker, mqtts://: p50", "\(fmt(tlsP50 / 1000, 3)) ms",
        "paho MQTT 5 RPC, TLS \(fmt(pahoTLS.p50 / 1000, 3)) ms (\(fmt(tlsP50 / pahoTLS.p50, 2))×)", "≤ paho", tlsP50 <= pahoTLS.p50)
    agent.stop()
    agentStopped = true

    // 4. A fleet of simulated agents on the plaintext listener; 3b. a broker restart under it.
    try fleetBench(size: fleetSize, authority: deviceA, watcherDevice: deviceB, broker: plain, port: plainPort,
                   mosquitto: mosquitto, work: work, logger: logger)
}

/// `size` simulated agents of `authority`'s account (each a broker hub, signed presence and a
/// broker listener serving describe), on a few event loops of this process.
func fleetBench(
    size: Int, authority: BenchDevice, watcherDevice: BenchDevice, broker url: String, port: Int, mosquitto: Mosquitto,
    work: URL, logger: Logger
) throws {
    guard let ca = authority.trustStore.credentials.authority else { throw BenchError("device A holds no account key") }
    let rssBefore = residentBytesOf(0), brokerBefore = mosquitto.residentBytes
    var agents: [(info: DeviceInfo, credentials: DeviceCredentials, trustStore: TrustStore)] = []
    for i in 0..<size {
        let bundle = try DeviceBundle.make(named: "Sim \(i)", by: ca, id: UUID().uuidString.lowercased())
        let folder = ConfigurationFolder(path: work.appendingPathComponent("fleet/\(i)").path)
        try folder.create()
        let credentials = try DeviceCredentials.install(bundle, in: folder)
        agents.append((DeviceInfo(id: credentials.deviceID, name: "Sim \(i)", kind: .tv), credentials,
                       try TrustStore(folder: folder, credentials: credentials)))
    }
    // Not shut down: each ServingPolicy's revocation check comes back to its loop from the
    // thread pool, and ServingPolicy's drain is the agent server's; the process ends soon after.
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
    let endpoint = BrokerHub.Endpoint(host: "127.0.0.1", port: port, tls: nil)
    let started = baton_monotonic_ns()
    var hubs: [BrokerHub] = [], ready: [EventLoopFuture<Void>] = []
    var keep: [AnyObject] = []
    for agent in agents {
        let loop = group.next()
        let epoch = PresencePublisher.newEpoch()
        let hub = try BrokerHub(
            endpoint: endpoint, role: .agent, trustStore: agent.trustStore,
            will: try PresencePublisher.will(for: agent.info, credentials: agent.credentials, epoch: epoch), sessionExpiry: 30,
            eventLoop: loop, logger: logger)
        let info = agent.info
        let policy = ServingPolicy(eventLoop: loop, trustStore: agent.trustStore, logger: logger) { _ in SimulatedAgent(info: info) }
        let listener = BrokerListener(hub: hub, logger: logger)
        ready.append(loop.flatSubmit { listener.start(policy: policy) })
        let presence = PresencePublisher(hub: hub, credentials: agent.credentials, epoch: epoch, logger: logger) { (info, []) }
        presence.start()
        hubs.append(hub)
        keep += [policy, listener, presence]
    }
    defer { for hub in hubs { _ = try? hub.stop().wait() } }
    try EventLoopFuture.andAllSucceed(ready, on: group.next()).wait()
    let online = Double(baton_monotonic_ns() - started) / 1e9
    let rssFleet = residentBytesOf(0)

    let watcherGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? watcherGroup.syncShutdownGracefully() }
    let watcher = try BrokerWatcher(watcherDevice, broker: url, on: watcherGroup.next(), logger: logger)
    defer { watcher.stop() }
    let watching = baton_monotonic_ns()
    watcher.start()
    try waitFor("the watcher to see the fleet", seconds: 60 + Double(size) / 10) { watcher.log.seenCount >= size }
    let seeAll = Double(watcher.log.lastSeen - watching) / 1e9
    row("fleet of \(size): one watcher sees all (presence + describe each)", "\(fmt(seeAll, 2)) s",
        "fleet connected, presence said in \(fmt(online, 2)) s", "", nil)
    let brokerRSS = mosquitto.residentBytes
    row("fleet of \(size): broker RSS", "\(brokerRSS / 1024) KiB",
        "\(fmt(Double(brokerRSS - brokerBefore) / Double(size) / 1024, 2)) KiB a device (before: \(brokerBefore / 1024) KiB)", "", nil)
    row("fleet of \(size): bench process RSS, agents' share", "\(fmt(Double(rssFleet - rssBefore) / Double(size) / 1024, 1)) KiB a device",
        "process \(residentBytesOf(0) / 1024 / 1024) MiB with the watcher", "", nil)

    // A broker restart: every device's presence back, and no watcher says `removed`.
    let back = PresenceTimes()
    let ids = Set(agents.map { $0.info.id.lowercased() })
    let hub = watcher.hub, trust = watcherDevice.trustStore
    _ = try hub.eventLoop.flatSubmit {
        hub.observe(hub.topics.allPresence) { message in
            guard let (device, _) = hub.topics.device(in: message.topic), ids.contains(device),
                  let record = try? PresenceRecord.verify(message.payload.readableBytesView, topic: message.topic, device: device, trust: trust.trust),
                  record.state == .online else { return }
            back.heard(device)
        }
    }.wait()
    let stopped = baton_monotonic_ns()
    mosquitto.stop()
    back.listen()
    try mosquitto.start()
    let down = Double(baton_monotonic_ns() - stopped) / 1e9
    try waitFor("every presence back after the restart", seconds: 120) { back.count >= size }
    let allBack = Double(back.last - stopped) / 1e9
    // Long enough for any will heard at the restart to be confirmed.
    usleep(UInt32(max(0, 10 - allBack) * 1e6))
    let falseRemovals = watcher.log.losses(since: stopped)
    row("broker restart → every presence back (\(size) devices)", "\(fmt(allBack, 2)) s",
        "broker down \(fmt(down, 2)) s", "", nil)
    row("  watchers' false removals across the restart", "\(falseRemovals)", "", "0", falseRemovals == 0)
    withExtendedLifetime(keep) {}
}

/// When each device's online presence was first heard once ``listen()`` was called.
final class PresenceTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [String: Int64] = [:]
    private var listening = false

    func listen() { lock.withLock { listening = true } }

    func heard(_ device: String) {
        lock.withLock { if listening, times[device] == nil { times[device] = baton_monotonic_ns() } }
    }

    var count: Int { lock.withLock { times.count } }
    var last: Int64 { lock.withLock { times.values.max() ?? 0 } }
}
