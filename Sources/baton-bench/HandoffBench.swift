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
/// own socket; it plays muted until the switch. Position error and overlap come from both
/// players' own clocks (their readings just after the switch), as the report gives them.
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
    let ends = [(phoneTarget, tvTarget, tvMPV), (tvTarget, phoneTarget, phoneMPV)]
    for i in 0..<21 {
        let (from, to, watched) = ends[i % 2]
        let restart = RestartWatch(watched)
        let t0 = baton_monotonic_ns()
        let report = try handoff(client, from, to, on: loop)
        guard report.status == .success else { throw BenchError("handoff mpv → mpv: \(report.status.rawValue): \(report.detail)") }
        // The first one opens the connections: not counted.
        if i > 0 { mpvRuns.append(HandoffRunFigures(report: report, firstAudio: try restart.milliseconds(since: t0))) }
    }
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
        let report = try handoff(client, phoneTarget, speakerTarget, on: loop) {
            // Until the handoff is over, look for MPD playing a new song.
            mpd.firstPlay(after: before)
        }
        guard report.0.status == .success else { throw BenchError("handoff mpv → MPD: \(report.0.status.rawValue): \(report.0.detail)") }
        if i > 0, let first = report.1 { mpdRuns.append(HandoffRunFigures(report: report.0, firstAudio: Double(first - t0) / 1e6)) }
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
    let positionError: Double?
    let overlap: Double?

    init(report: HandoffReport, firstAudio: Double) {
        self.firstAudio = firstAudio
        confirmed = report.latencyMs
        positionError = report.positionErrorMs
        overlap = report.overlapMs
    }
}

private func summarize(_ pair: String, runs: [HandoffRunFigures], floor: [Double], floorName: String) {
    let first = runs.map(\.firstAudio).sorted(), confirmed = runs.map(\.confirmed).sorted(), floor = floor.sorted()
    let f50 = percentile(floor, 0.5), f99 = percentile(floor, 0.99)
    let a50 = percentile(first, 0.5), a99 = percentile(first, 0.99)
    row("handoff \(pair) ×\(runs.count): first audio p50/p99", "\(fmt(a50))/\(fmt(a99)) ms",
        "\(floorName) \(fmt(f50))/\(fmt(f99)) ms", "≤ floor+10", a50 <= f50 + 10)
    row("  confirmed: audible, source paused p50/p99", "\(fmt(percentile(confirmed, 0.5)))/\(fmt(percentile(confirmed, 0.99))) ms",
        "proof: 2 readings 300 ms apart", "", nil)
    let errors = runs.compactMap(\.positionError).map(abs).sorted()
    if !errors.isEmpty {
        let worst = errors.last!
        row("  position error |target − source| p50/max", "\(fmt(percentile(errors, 0.5)))/\(fmt(worst)) ms",
            "from both players' own clocks", "≤ 30 ms", worst <= 30)
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

private func handoff(_ client: BatonClient, _ from: DeviceTarget, _ to: DeviceTarget, on loop: any EventLoop) throws -> HandoffReport {
    try handoff(client, from, to, on: loop) { () }.0
}

/// The time of an mpv's next `playback-restart`, on the monotonic clock.
private final class RestartWatch: @unchecked Sendable {
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
    }

    func milliseconds(since start: Int64) throws -> Double {
        let at = try promise.futureResult.wait()
        return Double(at - start) / 1e6
    }
}

private func connectMPV(_ socket: String, on loop: any EventLoop) throws -> MPVConnection {
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
    let port = try freePort()
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

private func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard ok else { throw BenchError("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

private func runToEnd(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(executable) failed") }
}
