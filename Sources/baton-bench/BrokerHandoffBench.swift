// The handoff over the broker beside the same handoff over TCP (issue 23): two agents of one
// account with real mpv players, each reached by one client through a mosquitto of the bench's
// own and by another over its TCP+TLS listener, the two interleaved in one run.
import BatonAgent
import BatonClient
import BatonCore
import CLuaShim
import Foundation
import Logging
import NIOCore
import NIOPosix

/// One of the two agents: how each client reaches it, and its mpv's own socket.
private struct HandoffEnd {
    let agent: AgentProcess
    let broker: DeviceTarget
    let tcp: DeviceTarget
    let mpv: MPVConnection
}

/// `count` handoffs mpv → mpv through the broker and `count` over TCP+TLS between the same two
/// agents, interleaved (broker, TCP, TCP, broker, ...: machine noise hits both alike) and each
/// from the player that plays (the direction alternates), after one of each that opens the
/// connections (not counted). Measured as ``handoffBench(baton:)`` measures: the target's
/// first audio from the request (its mpv's `playback-restart`), the report's wall time, and
/// the position error read on the players' own sockets. BATON_BENCH_BROKER_HANDOFFS sets
/// `count` (10 by default); BATON_BENCH_BROKER_TLS=1 puts TLS between the broker and its clients.
func brokerHandoffBench(baton: String) throws {
    guard let sox = which("sox"), which("mpv") != nil else {
        print("handoff over the broker: skipped (it needs mpv and sox)")
        return
    }
    let count = max(1, Int(ProcessInfo.processInfo.environment["BATON_BENCH_BROKER_HANDOFFS"] ?? "") ?? 10)
    var logger = Logger(label: "bench")
    logger.logLevel = .critical

    let work = try benchFolder("baton-bench-broker-handoff")
    defer { try? FileManager.default.removeItem(at: work) }
    let sweep = work.appendingPathComponent("sweep.flac").path
    try runToEnd(sox, ["-n", "-r", "44100", "-c", "1", sweep, "synth", "60", "sine", "100-4100"])

    // Three devices of one account: the phone and the TV serve (`baton agent`s), the bench asks.
    let homes = ["phone", "tv", "bench"].map { work.appendingPathComponent($0) }
    try runBaton(baton, home: homes[0], ["account", "show"])
    for (home, name) in zip(homes.dropFirst(), ["TV", "Bench"]) {
        let bundle = work.appendingPathComponent("\(name).json").path
        try runBaton(baton, home: homes[0], ["account", "export-device", name, "--output", bundle])
        try runBaton(baton, home: home, ["account", "import", bundle])
    }
    // A plaintext listener, or with BATON_BENCH_BROKER_TLS=1 a TLS one as `baton broker config`
    // writes it (its ACL left out).
    let port = try freeLoopbackPort(), tls = ProcessInfo.processInfo.environment["BATON_BENCH_BROKER_TLS"] == "1"
    var listener = "listener \(port) 127.0.0.1\n"
    if tls {
        let certificates = work.appendingPathComponent("broker").path
        try runBaton(baton, home: homes[0], ["broker", "config", "--host", "127.0.0.1", "--dir", certificates, "--port", "\(port)"])
        listener += """
            cafile \(certificates)/ca.pem
            certfile \(certificates)/server.pem
            keyfile \(certificates)/server-key.pem
            require_certificate true
            use_identity_as_username true

            """
    }
    let mosquitto = try Mosquitto(config: """
        per_listener_settings false
        allow_anonymous true
        persistence false
        user root
        set_tcp_nodelay true
        \(listener)
        """, ports: [port], in: work)
    defer { mosquitto.stop() }
    let url = "\(tls ? "mqtts" : "mqtt")://127.0.0.1:\(port)"

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let loop = group.next()
    let bench = try BenchDevice(home: homes[2])
    // One client through the broker only (its targets have no TCP route and no direct
    // candidates, so it never moves off the broker), one over TCP+TLS only.
    let (brokerClient, hub) = try bench.client(broker: url, on: loop, logger: logger)
    defer {
        brokerClient.shutdown()
        _ = try? hub.stop().wait()
    }
    var tcpOptions = BatonClient.Options()
    tcpOptions.security = bench.security
    let tcpClient = BatonClient(eventLoop: loop, options: tcpOptions, logger: logger)
    defer { tcpClient.shutdown() }

    // Each agent listens on loopback TCP (AgentProcess's `--listen`), without mDNS, and on the broker.
    var agents: [AgentProcess] = []
    defer { for agent in agents { agent.stop() } }
    var ends: [HandoffEnd] = []
    for (home, name) in zip(homes, ["phone", "tv"]) {
        let socket = home.appendingPathComponent("mpv.sock").path
        let agent = try AgentProcess(baton: baton, insecure: false, arguments: ["--broker", url], config: """
            device{ name = "\(name)", kind = "tv" }
            app{ id = "player", schemes = {"file"}, player = { backend = "mpv", socket = "\(socket)", args = {"--ao=null", "--no-video"} } }
            """, home: home)
        agents.append(agent)
        let id = try BenchDevice(home: home).id
        ends.append(HandoffEnd(
            agent: agent, broker: bench.brokerTarget(id), tcp: DeviceTarget(deviceID: id, routes: [.tcp(agent.address)], account: .ownAccount),
            mpv: try connectMPV(socket, on: loop)))
    }
    defer { for end in ends { end.mpv.close() } }
    for end in ends {
        try reachable(brokerClient, end.broker)
        try reachable(tcpClient, end.tcp)
    }

    let play = PlaybackCommand.play(.init(queue: [sweep], position: 10))
    let played = try tcpClient.send(play.message, to: PlaybackCommand.service, app: "player", on: ends[0].tcp, timeout: .seconds(20)).wait()
    guard played.status == .success else { throw BenchError("play on the phone: \(played.status.rawValue): \(played.detail)") }
    let phoneSocket = PositionSampler(socket: .mpv(ends[0].mpv))
    try waitFor("the phone's mpv to play", seconds: 20) { (try? phoneSocket.read())?.paused == false }

    var overBroker: [HandoffRunFigures] = [], overTCP: [HandoffRunFigures] = []
    for k in 0..<(2 * count + 2) {
        // broker, TCP, TCP, broker: each way round as often over each.
        let viaBroker = k % 4 == 0 || k % 4 == 3
        let (from, to) = (ends[k % 2], ends[(k + 1) % 2])
        let restart = RestartWatch(to.mpv)
        let sourceReadings = BackgroundSampler(PositionSampler(socket: .mpv(from.mpv)))
        let t0 = baton_monotonic_ns()
        let report: HandoffReport
        do {
            report = viaBroker
                ? try handoff(brokerClient, from.broker, to.broker, on: loop) : try handoff(tcpClient, from.tcp, to.tcp, on: loop)
        } catch {
            _ = sourceReadings.stop()
            throw error
        }
        let readings = sourceReadings.stop()
        let path = viaBroker ? "over the broker" : "over TCP"
        guard report.status == .success else { throw BenchError("handoff \(path): \(report.status.rawValue): \(report.detail)") }
        let run = HandoffRunFigures(
            report: report, firstAudio: try restart.milliseconds(since: t0),
            measured: try measuredError(source: readings, target: PositionSampler(socket: .mpv(to.mpv))))
        // The first of each opens the connections (and the broker link's key exchange).
        guard k >= 2 else { continue }
        if viaBroker { overBroker.append(run) } else { overTCP.append(run) }
    }
    for end in ends { _ = try? end.mpv.command(.array([.string("stop")])).wait() }

    func spread(_ values: [Double]) -> (p50: Double, max: Double) {
        let sorted = values.sorted()
        return (percentile(sorted, 0.5), sorted.last!)
    }
    let audio = spread(overBroker.map(\.firstAudio)), audioTCP = spread(overTCP.map(\.firstAudio))
    row("handoff via \(tls ? "mqtts" : "mqtt")://, ×\(count) each: first audio p50/max", "\(fmt(audio.p50))/\(fmt(audio.max)) ms",
        "TCP+TLS, interleaved \(fmt(audioTCP.p50))/\(fmt(audioTCP.max)) ms (\(fmt(audio.p50 / audioTCP.p50, 2))×)", "", nil)
    let confirmed = spread(overBroker.map(\.confirmed)), confirmedTCP = spread(overTCP.map(\.confirmed))
    row("  confirmed (the report's wall time) p50/max", "\(fmt(confirmed.p50))/\(fmt(confirmed.max)) ms",
        "TCP+TLS \(fmt(confirmedTCP.p50))/\(fmt(confirmedTCP.max)) ms (\(fmt(confirmed.p50 / confirmedTCP.p50, 2))×)", "", nil)
    // The handoff's own target (HandoffBench's), whatever carries it.
    let error = spread(overBroker.map { abs($0.measured) }), errorTCP = spread(overTCP.map { abs($0.measured) })
    row("  position error |target − source| p50/max", "\(fmt(error.p50))/\(fmt(error.max)) ms",
        "TCP+TLS \(fmt(errorTCP.p50))/\(fmt(errorTCP.max)) ms, players' sockets", "≤ 10/30 ms", error.p50 <= 10 && error.max <= 30)
}

/// Waits until `client` describes `target` (the agent's broker connection comes up after its
/// ready line), 15 s at most.
private func reachable(_ client: BatonClient, _ target: DeviceTarget) throws {
    let deadline = Date().addingTimeInterval(15)
    while true {
        do {
            _ = try client.describe(target, timeout: .seconds(5)).wait()
            return
        } catch {
            guard Date() < deadline else { throw BenchError("\(target) not reachable: \(error)") }
            usleep(100_000)
        }
    }
}
