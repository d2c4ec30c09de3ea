import BatonAgent
import BatonClient
import BatonCore
import CLuaShim
import Foundation
import NIOCore
import NIOPosix

/// The handoff's figures: 20 handoffs mpv → mpv and 20 mpv → MPD between real agents and
/// players, beside the floor (the same player told to play at a position directly over its own
/// IPC). The target's first audio is when its player starts playing (mpv's `playback-restart`
/// event; MPD's status turning to the new song playing), seen by the benchmark on the player's
/// own socket; it plays muted until the switch. The position error is measured from outside:
/// the source read on its own socket while the handoff runs, the target on its own after,
/// each a line through its readings lined up at its steps (``PositionSampler``); the report's
/// own error is shown beside. Paused handoffs back and forth are read on the sockets too.
/// The overlap is the report's.
func handoffBench(baton: String) throws {
    guard let sox = which("sox"), which("mpv") != nil else {
        print("handoff: skipped (it needs mpv and sox)")
        return
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-handoff-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let music = folder.path, sweep = folder.appendingPathComponent("sweep.flac").path
    try runToEnd(sox, ["-n", "-r", "44100", "-c", "1", sweep, "synth", "60", "sine", "100-4100"])

    func mpvAgent(_ name: String) throws -> (AgentProcess, String) {
        let socket = folder.appendingPathComponent("\(name)-mpv.sock").path
        let agent = try AgentProcess(baton: baton, insecure: true, config: """
            device{ name = "\(name)", kind = "tv" }
            app{ id = "player", schemes = {"file"}, player = { backend = "mpv", socket = "\(socket)", args = {"--ao=null", "--no-video"} } }
            """)
        return (agent, socket)
    }
    let (phone, phoneSocket) = try mpvAgent("phone")
    defer { phone.stop() }
    let (tv, tvSocket) = try mpvAgent("tv")
    defer { tv.stop() }
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let client = BatonClient(eventLoop: loop)
    let phoneMPV = try connectMPV(phoneSocket, on: loop), tvMPV = try connectMPV(tvSocket, on: loop)
    let phoneTarget = DeviceTarget(phone.address), tvTarget = DeviceTarget(tv.address)
    let play = PlaybackCommand.play(.init(queue: [sweep], position: 10))
    _ = try client.send(play.message, to: PlaybackCommand.service, app: "player", on: phoneTarget).wait()

    // mpv → mpv, back and forth.
    var mpvRuns: [HandoffRunFigures] = []
    let ends = [(phoneTarget, tvTarget, phoneMPV, tvMPV), (tvTarget, phoneTarget, tvMPV, phoneMPV)]
    for i in 0..<21 {
        let (from, to, source, watched) = ends[i % 2]
        let restart = RestartWatch(watched)
        let sourceReadings = BackgroundSampler(PositionSampler(socket: .mpv(source)))
        let t0 = baton_monotonic_ns()
        let report = try handoff(client, from, to, on: loop)
        guard report.status == .success else { throw BenchError("handoff mpv → mpv: \(report.status.rawValue): \(report.detail)") }
        let outside = try measuredError(source: sourceReadings.stop(), target: PositionSampler(socket: .mpv(watched)))
        // The first one opens the connections: not counted.
        if i > 0 { mpvRuns.append(HandoffRunFigures(report: report, firstAudio: try restart.milliseconds(since: t0), measured: outside)) }
    }
    try pausedBackAndForth(client, sweep, phoneTarget, tvTarget, PositionSampler(socket: .mpv(phoneMPV)), PositionSampler(socket: .mpv(tvMPV)), on: loop)
    // The floor: loadfile at a position, straight to mpv, until it plays.
    var mpvFloor: [Double] = []
    for i in 0..<20 {
        let restart = RestartWatch(tvMPV)
        let t0 = baton_monotonic_ns()
        _ = try tvMPV.command(.object([
            JSON.Member("name", .string("loadfile")), JSON.Member("url", .string(sweep)), JSON.Member("flags", .string("replace")),
            JSON.Member("options", .object([JSON.Member("start", .string(String(10 + i))), JSON.Member("pause", .string("no"))])),
        ])).wait()
        mpvFloor.append(try restart.milliseconds(since: t0))
    }
    _ = try tvMPV.command(.array([.string("stop")])).wait()
    summarize("mpv → mpv", runs: mpvRuns, floor: mpvFloor, floorName: "floor: mpv loadfile at T")

    guard let mpdPath = which("mpd") else {
        print("handoff mpv → MPD: skipped (no mpd)")
        return
    }
    let mpd = try startMPD(mpdPath, music: music, folder: folder, on: loop)
    defer { mpd.stop() }
    let speaker = try AgentProcess(baton: baton, insecure: true, config: """
        device{ name = "speaker", kind = "speaker" }
        app{ id = "player", schemes = {"file"}, player = { backend = "mpd", address = "127.0.0.1:\(mpd.port)", music_directory = "\(music)" } }
        """)
    defer { speaker.stop() }
    let speakerTarget = DeviceTarget(speaker.address)
    _ = try client.send(play.message, to: PlaybackCommand.service, app: "player", on: phoneTarget).wait()
    var mpdRuns: [HandoffRunFigures] = []
    for i in 0..<21 {
        let t0 = baton_monotonic_ns()
        let before = try mpd.connection.command("status").wait()["songid"]
        let sourceReadings = BackgroundSampler(PositionSampler(socket: .mpv(phoneMPV)))
        let report = try handoff(client, phoneTarget, speakerTarget, on: loop) {
            // Until the handoff is over, look for MPD playing a new song.
            mpd.firstPlay(after: before)
        }
        guard report.0.status == .success else { throw BenchError("handoff mpv → MPD: \(report.0.status.rawValue): \(report.0.detail)") }
        let outside = try measuredError(source: sourceReadings.stop(), target: PositionSampler(socket: .mpd(mpd.connection)))
        if i > 0, let first = report.1 {
            mpdRuns.append(HandoffRunFigures(report: report.0, firstAudio: Double(first - t0) / 1e6, measured: outside))
        }
        let back = try handoff(client, speakerTarget, phoneTarget, on: loop)
        guard back.status == .success else { throw BenchError("handoff MPD → mpv: \(back.status.rawValue): \(back.detail)") }
    }
    var mpdFloor: [Double] = []
    for i in 0..<20 {
        let t0 = baton_monotonic_ns()
        _ = try mpd.connection.command("clear").wait()
        let id = try mpd.connection.command("addid \"sweep.flac\"").wait()["Id"] ?? ""
        _ = try mpd.connection.command("seekid \(id) \(10 + i)").wait()
        guard let first = mpd.firstPlay(after: nil) else { throw BenchError("MPD did not play") }
        mpdFloor.append(Double(first - t0) / 1e6)
    }
    summarize("mpv → MPD", runs: mpdRuns, floor: mpdFloor, floorName: "floor: MPD addid, seekid T")
}

/// One handoff's figures, in milliseconds.
struct HandoffRunFigures {
    let firstAudio: Double
    let confirmed: Double
    /// The target minus the source, read on their own sockets.
    let measured: Double
    /// The report's error minus the measured one.
    let reportOff: Double?
    let overlap: Double?

    init(report: HandoffReport, firstAudio: Double, measured: Double) {
        self.firstAudio = firstAudio
        self.measured = measured
        confirmed = report.latencyMs
        reportOff = report.positionErrorMs.map { $0 - measured }
        overlap = report.overlapMs
    }
}

/// The target's position minus the source's at one instant (ms), from outside: the source's
/// readings while it played during the handoff, the target's read for 0.3 s after it.
func measuredError(source: [PositionSampler.Reading], target: PositionSampler) throws -> Double {
    guard let sourceLine = PositionSampler.playingLine(source), sourceLine.steps > 0 else {
        throw BenchError("too few readings of the source while it played (\(source.count))")
    }
    guard let targetLine = PositionSampler.playingLine(try target.sample(for: 0.3)) else { throw BenchError("no readings of the target") }
    return (targetLine.position - sourceLine.position(at: targetLine.at)) * 1000
}

/// A paused source handed back and forth, 4 round trips between two mpv agents (each of which
/// played before, and keeps the file loaded), read on both sockets after each: how far the
/// target is from the source, and how far the position drifted in all.
private func pausedBackAndForth(
    _ client: BatonClient, _ sweep: String, _ phone: DeviceTarget, _ tv: DeviceTarget, _ phoneSocket: PositionSampler, _ tvSocket: PositionSampler,
    on loop: any EventLoop
) throws {
    let start = PlaybackCommand.play(.init(queue: [sweep], position: 11.321, paused: true))
    _ = try client.send(start.message, to: PlaybackCommand.service, app: "player", on: phone).wait()
    var gaps: [Double] = []
    let first = try phoneSocket.read().position
    var last = first
    let ends = [(phone, tv, phoneSocket, tvSocket), (tv, phone, tvSocket, phoneSocket)]
    for i in 0..<8 {
        let (from, to, source, target) = ends[i % 2]
        let options = { var options = HandoffOptions(); options.busy = .replace; return options }()
        let promise = loop.makePromise(of: HandoffReport.self)
        promise.completeWithTask { await client.handoff(from: from, to: to, options: options) }
        let report = try promise.futureResult.wait()
        guard report.status == .success else { throw BenchError("paused handoff: \(report.status.rawValue): \(report.detail)") }
        last = try target.read().position
        gaps.append(abs(last - (try source.read().position)) * 1000)
    }
    let worst = gaps.max() ?? 0, drift = abs(last - first) * 1000
    row("handoff paused mpv ⇄ mpv ×8: |target − source| max", "\(fmt(worst)) ms", "on the players' own sockets", "≤ 30 ms", worst <= 30)
    row("  drift after 4 round trips", "\(fmt(drift)) ms", "was ~660 ms (165 ms a return)", "≤ 30 ms", drift <= 30)
}

private func summarize(_ pair: String, runs: [HandoffRunFigures], floor: [Double], floorName: String) {
    let first = runs.map(\.firstAudio).sorted(), confirmed = runs.map(\.confirmed).sorted(), floor = floor.sorted()
    let f50 = percentile(floor, 0.5), f99 = percentile(floor, 0.99)
    let a50 = percentile(first, 0.5), a99 = percentile(first, 0.99)
    row("handoff \(pair) ×\(runs.count): first audio p50/p99", "\(fmt(a50))/\(fmt(a99)) ms",
        "\(floorName) \(fmt(f50))/\(fmt(f99)) ms", "≤ floor+10", a50 <= f50 + 10)
    row("  confirmed: audible, source paused p50/p99", "\(fmt(percentile(confirmed, 0.5)))/\(fmt(percentile(confirmed, 0.99))) ms",
        "proof 300 ms, then both measured, seeks", "", nil)
    let errors = runs.map(\.measured).map(abs).sorted()
    if !errors.isEmpty {
        let worst = errors.last!, p50 = percentile(errors, 0.5)
        row("  position error |target − source| p50/max", "\(fmt(p50))/\(fmt(worst)) ms",
            "players' own sockets, lined up at steps", "≤ 10/30 ms", p50 <= 10 && worst <= 30)
        let signed = runs.map(\.measured).sorted()
        row("    signed (target − source) min/max", String(format: "%+.1f/%+.1f ms", signed.first!, signed.last!), "", "", nil)
    }
    let off = runs.compactMap(\.reportOff).map(abs).sorted()
    if let worst = off.last {
        row("  report's error − measured p50/max", "\(fmt(percentile(off, 0.5)))/\(fmt(worst)) ms",
            "the report is a measurement", "≤ 10 ms", worst <= 10)
    }
    let overlaps = runs.compactMap(\.overlap)
    if let worst = overlaps.map(abs).max() {
        let sorted = overlaps.sorted()
        row("  overlap (+) or gap (−) p50/worst", "\(fmt(percentile(sorted, 0.5)))/\(fmt(worst)) ms",
            "from both players' own clocks", "≤ 100 ms", worst <= 100)
    }
}

/// Runs one handoff from the benchmark's thread; `meanwhile` runs on it until the handoff ends.
private func handoff<T>(
    _ client: BatonClient, _ from: DeviceTarget, _ to: DeviceTarget, on loop: any EventLoop, meanwhile: () -> T
) throws -> (HandoffReport, T) {
    let promise = loop.makePromise(of: HandoffReport.self)
    promise.completeWithTask { await client.handoff(from: from, to: to) }
    let seen = meanwhile()
    return (try promise.futureResult.wait(), seen)
}

func handoff(_ client: BatonClient, _ from: DeviceTarget, _ to: DeviceTarget, on loop: any EventLoop) throws -> HandoffReport {
    try handoff(client, from, to, on: loop) { () }.0
}

/// The time of an mpv's next `playback-restart`, on the monotonic clock; a failure if none
/// comes within 30 s.
final class RestartWatch: @unchecked Sendable {
    private let promise: EventLoopPromise<Int64>

    init(_ mpv: MPVConnection) {
        let promise = mpv.eventLoop.makePromise(of: Int64.self)
        self.promise = promise
        try? mpv.eventLoop.submit {
            mpv.onEvent = { event in
                guard event.name == "playback-restart" else { return }
                mpv.onEvent = nil
                promise.succeed(baton_monotonic_ns())
            }
        }.wait()
        // A promise completes once: this does nothing after the event.
        mpv.eventLoop.scheduleTask(in: .seconds(30)) { promise.fail(BenchError("no playback-restart within 30 s")) }
    }

    func milliseconds(since start: Int64) throws -> Double {
        let at = try promise.futureResult.wait()
        return Double(at - start) / 1e6
    }
}

func connectMPV(_ socket: String, on loop: any EventLoop) throws -> MPVConnection {
    for _ in 0..<250 {
        if let connection = try? MPVConnection.connect(path: socket, on: loop).wait() { return connection }
        usleep(20_000)
    }
    throw BenchError("no mpv on \(socket)")
}

/// A real mpd with a null output, for the benchmark.
private final class BenchMPD: @unchecked Sendable {
    let process: Process
    let port: Int
    let connection: MPDConnection

    init(process: Process, port: Int, connection: MPDConnection) {
        self.process = process
        self.port = port
        self.connection = connection
    }

    /// When MPD is first seen playing a song other than `previous` (polling its status), on
    /// the monotonic clock; nil after 10 s.
    func firstPlay(after previous: String?) -> Int64? {
        let deadline = baton_monotonic_ns() + 10_000_000_000
        while baton_monotonic_ns() < deadline {
            guard let status = try? connection.command("status").wait() else { return nil }
            if status["state"] == "play", status["songid"] != previous { return baton_monotonic_ns() }
        }
        return nil
    }

    func stop() {
        connection.close()
        process.terminate()
        process.waitUntilExit()
    }
}

private func startMPD(_ path: String, music: String, folder: URL, on loop: any EventLoop) throws -> BenchMPD {
    let port = try freeLoopbackPort()
    let config = folder.appendingPathComponent("mpd.conf")
    try MPDConnection.headlessConfiguration(musicDirectory: music, stateDirectory: folder.path, port: port)
        .write(to: config, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = ["--no-daemon", config.path]
    process.standardError = FileHandle.nullDevice
    try process.run()
    for _ in 0..<250 {
        if let connection = try? MPDConnection.connect(host: "127.0.0.1", port: port, on: loop).wait() {
            _ = try connection.command("update").wait()
            while (try connection.command("status").wait())["updating_db"] != nil { usleep(20_000) }
            return BenchMPD(process: process, port: port, connection: connection)
        }
        usleep(20_000)
    }
    process.terminate()
    throw BenchError("mpd did not listen on \(port)")
}

func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

func runToEnd(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(executable) failed") }
}
