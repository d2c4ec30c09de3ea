@testable import BatonAgent
import BatonCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

/// A private D-Bus bus for a test: a `dbus-daemon` of its own (a session bus any user may
/// join), listening in `directory`, stopped at the end. Run as `user` if given (VLC refuses
/// root, and a bus of its user's lets root's client in by the policy below).
struct TestBus {
    let process: Spawned
    let address: String

    /// Starts one in `directory`; its address is given without the bus's guid, so a client may
    /// reach another bus started there later, as it would a session bus started anew.
    static func start(in directory: String, user: TestUser? = nil, output name: String = "dbus-daemon.out") async throws -> TestBus {
        let config = directory + "/bus.conf"
        let socket = directory + "/bus"
        try """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let output = directory + "/" + name
        let process = try Spawned((user?.prefix ?? []) + ["dbus-daemon", "--config-file=\(config)", "--nofork", "--print-address=1"], output: output)
        // It prints its address once it listens.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: output, encoding: .utf8), let line = text.split(separator: "\n").first(where: { $0.hasPrefix("unix:") }) {
                return TestBus(process: process, address: String(line.split(separator: ",")[0]))
            }
            if process.exited != nil { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        await process.stop()
        let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        throw MPRISError.closed("dbus-daemon did not listen within 20 s: \(said)")
    }
}

/// The user VLC runs as (it refuses root), made if missing; its `prefix` runs a command as it.
struct TestUser {
    static let name = "baton-vlc-test"
    let uid: uid_t
    let gid: gid_t

    var prefix: [String] { ["setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups"] }

    static func ensure() async throws -> TestUser {
        if getpwnam(name) == nil {
            let made = try Spawned(["useradd", "--system", "-M", "-s", "/usr/sbin/nologin", name])
            let status = await made.wait()
            guard status == 0 || getpwnam(name) != nil else { throw MPRISError.closed("useradd \(name) exited with \(status)") }
        }
        guard let entry = getpwnam(name) else { throw MPRISError.closed("no user \(name)") }
        return TestUser(uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// Gives `path` to the user.
    func own(_ path: String) {
        chown(path, uid, gid)
    }
}

/// mpv-mpris's plugin, where Debian puts it.
let mprisPlugin = ["/usr/lib/mpv-mpris/mpris.so", "/etc/mpv/scripts/mpris.so", "/usr/lib/x86_64-linux-gnu/mpv/scripts/mpris.so"]
    .first { FileManager.default.fileExists(atPath: $0) } ?? "/usr/lib/mpv-mpris/mpris.so"

/// Starts a headless mpv with mpv-mpris on `bus` (its JSON IPC at `socket` too).
func startMPRISMPV(bus: TestBus, socket: String, output: String) throws -> Spawned {
    try Spawned([
        "env", "DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "mpv", "--idle", "--no-config", "--load-scripts=no",
        "--script=\(mprisPlugin)", "--no-video", "--ao=null", "--input-ipc-server=\(socket)",
    ], output: output)
}

/// Starts a headless VLC as `user` on `bus`: the dummy interface, D-Bus control, and ALSA's null
/// device (a mixer of VLC's own, so its volume works, unlike `--aout dummy`).
func startVLC(bus: TestBus, user: TestUser, home: String, output: String) throws -> Spawned {
    try Spawned(user.prefix + [
        "env", "HOME=\(home)", "DBUS_SESSION_BUS_ADDRESS=\(bus.address)", "cvlc", "-I", "dummy", "--control", "dbus",
        "--aout", "alsa", "--alsa-audio-device=null", "--no-video",
    ], output: output)
}

/// A player for `busName` on `bus`, with the generous deadlines of a loaded machine.
func makeMPRISPlayer(_ busName: String, bus: String?, on loop: any EventLoop) -> MPRISPlayer {
    let player = MPRISPlayer(busName: busName, address: bus, on: loop, logger: Logger(label: "test.mpris"))
    player.callTimeout = .seconds(10)
    player.playTimeout = .seconds(30)
    player.settleTimeout = .seconds(20)
    return player
}

/// Waits until `player` answers its state (its bus name is owned), up to 20 s.
func waitOnBus(_ player: MPRISPlayer) async -> Bool {
    await eventually { (try? await player.state().get()) != nil }
}

/// The process of one test: a bus, a headless mpv with mpv-mpris on it (and its JSON IPC),
/// a player attached to it, and the test media; all stopped at the end.
struct MPRISMPVFixture {
    let bus: TestBus
    let mpv: Spawned
    let ipc: MPVConnection
    let player: MPRISPlayer
    let media: TestMedia
    let loop: any EventLoop
    let socket: String
}

func withMPRISMPV(_ body: (MPRISMPVFixture) async throws -> Void) async throws {
    let media = try await TestMedia.make()
    defer { try? FileManager.default.removeItem(atPath: media.directory) }
    try await withLoop { loop in
        let bus = try await TestBus.start(in: media.directory)
        let socket = media.directory + "/mpv.sock"
        let mpv = try startMPRISMPV(bus: bus, socket: socket, output: media.directory + "/mpv.out")
        let player = makeMPRISPlayer("org.mpris.MediaPlayer2.mpv", bus: bus.address, on: loop)
        func stop() async {
            _ = try? await player.shutdown().get()
            await mpv.stop()
            await bus.process.stop()
        }
        do {
            player.start()
            guard await waitOnBus(player) else { throw MPRISError.notOnBus("mpv with mpv-mpris did not join the bus within 20 s") }
            var ipc: MPVConnection?
            _ = await eventually { ipc = try? await MPVConnection.connect(path: socket, on: loop).get(); return ipc != nil }
            guard let ipc else { throw MPRISError.closed("mpv's IPC did not listen") }
            try await loop.submit { ipc.callTimeout = .seconds(20) }.get()
            try await body(MPRISMPVFixture(bus: bus, mpv: mpv, ipc: ipc, player: player, media: media, loop: loop, socket: socket))
            ipc.close()
        } catch {
            await stop()
            throw error
        }
        await stop()
    }
}

/// A raw connection to the player on `bus` (its own MPRIS interface, for readings the test
/// takes itself).
func withMPRISConnection(_ busName: String, bus: String, on loop: any EventLoop, _ body: (MPRISConnection) async throws -> Void) async throws {
    let connection = try await MPRISConnection.open(busName: busName, address: bus, callTimeout: .seconds(10), on: loop, logger: Logger(label: "test.mpris.raw")).get()
    defer { connection.close() }
    try await body(connection)
}

/// The player's `Position`, in seconds, and when it was asked for and answered.
func mprisPosition(_ connection: MPRISConnection) async throws -> Reading {
    let asked = Date()
    let value = try await connection.property("Position").get()
    let answered = Date()
    guard let microseconds = value.int64Value else { throw MPRISError.garbage("Position is \(value)") }
    return (Double(microseconds) / 1e6, asked, answered)
}

/// The steps a player's position moves in: the median of the jumps between distinct values,
/// read back to back for `span` seconds while it plays.
func positionSteps(_ connection: MPRISConnection, span: TimeInterval = 2) async throws -> Double {
    var values: [Double] = []
    let end = Date().addingTimeInterval(span)
    while Date() < end {
        let reading = try await mprisPosition(connection)
        if values.last != reading.seconds { values.append(reading.seconds) }
        try await Task.sleep(for: .milliseconds(5))
    }
    let steps = zip(values.dropFirst(), values).map { $0 - $1 }.filter { $0 > 0 }.sorted()
    guard !steps.isEmpty else { return .infinity }
    return steps[steps.count / 2]
}

/// Expects `failure` to be `player_failed` whose words contain `words`.
func expectPlayerFailed(_ failure: PlaybackFailure?, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard case .player(let text)? = failure else {
        Issue.record("not player_failed: \(String(describing: failure))", sourceLocation: sourceLocation)
        return
    }
    #expect(text.contains(words), "\(text)", sourceLocation: sourceLocation)
}

/// A play request for `uri` from `position`.
func playRequest(_ uri: String, from position: Double, paused: Bool = false, muted: Bool = false, volume: Double? = nil) -> PlaybackCommand.PlayRequest {
    PlaybackCommand.PlayRequest(queue: [uri], index: 0, position: position, paused: paused, volume: volume, muted: muted)
}

