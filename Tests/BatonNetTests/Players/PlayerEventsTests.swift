import BatonAgent
import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton.player` in a script against real agents with real players: the changes its handler
/// hears are pushed by the agent from the player's own events, made here on the player's own
/// socket (not through Baton), and its controls act on the player, checked on that socket.
@Suite("Players a script holds", .serialized, .timeLimit(.minutes(2)))
struct PlayerEventsTests {
    /// The script: holds the player, prints each change as `change paused uri`, and exits 0 at
    /// the change `last` (3 after 60 s without it).
    static func watcher(_ device: PlayerAgent, until last: String) -> String {
        """
        local p, status, detail = baton.player("\(device.address)")
        if not p then print("no player", status, detail) io.stdout:flush() baton.exit(1) end
        local state = assert(p:on("changed", function(change, state)
          print(change, state.paused, state.uri or "-")
          io.stdout:flush()
          if change == "\(last)" then p:close() baton.exit(0) end
        end))
        print("watching", state.paused) io.stdout:flush()
        baton.after(60, function() baton.exit(3) end)
        """
    }

    /// mpv's loadfile of `path` from `start` s, playing (the named form mpv 0.35 takes).
    static func load(_ path: String, start: Double) -> JSON {
        .object([
            JSON.Member("name", .string("loadfile")), JSON.Member("url", .string(path)), JSON.Member("flags", .string("replace")),
            JSON.Member("options", .object([JSON.Member("start", .string("\(start)")), JSON.Member("pause", .string("no"))])),
        ])
    }

    @Test("mpv's own changes reach the handler as mpv makes them: started, paused, resumed, position_jumped, track_changed, ended, stopped")
    func mpvChanges() async throws {
        let media = try await Media.make()
        let tv = try await PlayerAgent.mpv("Events TV")
        let script = try RunningScript(Self.watcher(tv, until: "stopped"))
        try await script.waitForLine("watching") { $0.hasPrefix("watching") }
        let mpv = try await tv.mpv()
        // Each made on mpv's own socket, each awaited before the next so the order is mpv's.
        try await script.after(mpv.command(Self.load(media.sweep, start: 5)), prints: "started\tfalse\t\(media.sweep)")
        try await script.after(mpv.command(.array([.string("set_property"), .string("pause"), .bool(true)])), prints: "paused\ttrue")
        try await script.after(mpv.command(.array([.string("set_property"), .string("pause"), .bool(false)])), prints: "resumed\tfalse")
        try await script.after(mpv.command(.array([.string("seek"), .double(30), .string("absolute")])), prints: "position_jumped\tfalse")
        // a.flac from 59 s ends by itself within a second or so.
        try await script.after(mpv.command(Self.load(media.file("a.flac"), start: 59)), prints: "track_changed\tfalse\t\(media.file("a.flac"))")
        try await script.waitForLine("ended") { $0.hasPrefix("ended") }
        try await script.after(mpv.command(Self.load(media.sweep, start: 1)), prints: "started\tfalse\t\(media.sweep)")
        _ = try await mpv.command(.array([.string("stop")])).get()
        #expect(await script.exitCode() == 0, "\(script.transcript)")
        let changes = script.lines.dropFirst().map { $0.split(separator: "\t").first.map(String.init) ?? "" }
        #expect(changes == ["started", "paused", "resumed", "position_jumped", "track_changed", "ended", "started", "stopped"], "\(script.transcript)")
        mpv.close()
        await tv.stop()
    }

    @Test("MPD's own changes reach the handler through its idle: started, paused, resumed, position_jumped, stopped")
    func mpdChanges() async throws {
        let media = try await Media.make()
        let directory = try TemporaryDirectory("baton-mpd")
        let mpd = try await RunningMPD.start(music: media.directory.path, in: directory)
        let speaker = try await PlayerAgent.mpd("Events Speaker", port: mpd.port, music: media.directory.path)
        let script = try RunningScript(Self.watcher(speaker, until: "stopped"))
        try await script.waitForLine("watching") { $0.hasPrefix("watching") }
        let connection = mpd.connection
        _ = try await connection.command("add sweep.flac").get()
        try await script.after(connection.command("play"), prints: "started\tfalse\t\(media.sweep)")
        try await script.after(connection.command("pause 1"), prints: "paused\ttrue")
        try await script.after(connection.command("pause 0"), prints: "resumed\tfalse")
        try await script.after(connection.command("seekcur 40"), prints: "position_jumped\tfalse")
        _ = try await connection.command("stop").get()
        #expect(await script.exitCode() == 0, "\(script.transcript)")
        let changes = script.lines.dropFirst().map { $0.split(separator: "\t").first.map(String.init) ?? "" }
        #expect(changes == ["started", "paused", "resumed", "position_jumped", "stopped"], "\(script.transcript)")
        await speaker.stop()
        await mpd.stop()
    }

    @Test("its controls act on the player itself: play at a position, pause, seek, volume, mute, read back on mpv's own socket")
    func controls() async throws {
        let media = try await Media.make()
        let tv = try await PlayerAgent.mpv("Controls TV")
        let result = try await runBaton(["run", "-e", """
            local p = assert(baton.player("\(tv.address)", "\(playerApp)"))
            -- From 20 s, not from 0 (read once loaded: later on a loaded machine).
            local proof = assert(p:play("\(media.sweep)", { position = 20 }))
            print("proof", proof.position >= 19.95 and proof.position < 25, proof.rate > 0.8, proof.granularity, proof.seek_latency)
            assert(p:pause())
            local state = assert(p:seek(33.5))
            -- A paused mpv that played lands a seek up to its audio buffer early.
            print("seek", state.paused, math.abs(state.position - 33.5) < 0.25)
            assert(p:volume(40))
            state = assert(p:mute(true))
            print("state", state.volume, state.granularity)
            print(tostring(p):match("^player ") ~= nil)
            p:close()
            """])
        #expect(result.code == 0, "\(result)")
        #expect(result.stdout == "proof\ttrue\ttrue\t0.1\t0.01\nseek\ttrue\ttrue\nstate\t40.0\t0.1\ntrue\n", "\(result)")
        let mpv = try await tv.mpv()
        let state = try await mpv.state().get()
        #expect(state.paused && abs((state.position ?? 0) - 33.5) < 0.25 && state.volume == 40, "\(state)")
        #expect(try await mpv.property("mute").get() == .bool(true))
        mpv.close()
        await tv.stop()
    }

    @Test("baton players: what plays where, as text and JSON; --watch prints the changes mpv makes on its own socket; an unknown device is 68")
    func playersCommand() async throws {
        let media = try await Media.make()
        let tv = try await PlayerAgent.mpv("Players TV")
        let mpv = try await tv.mpv()
        _ = try await mpv.command(Self.load(media.sweep, start: 12)).get()
        _ = await eventually { (try? await mpv.state().get())?.isPlaying == true }
        let text = try await runBaton(["players", tv.address.description])
        #expect(text.code == 0, "\(text)")
        #expect(text.stdout.hasPrefix("Players TV\t\(playerApp)\tplaying\t0:1"), "\(text)")
        #expect(text.stdout.hasSuffix("/1:00.0\t\(media.sweep)\n"), "\(text)")
        let json = try await runBaton(["players", tv.address.description, "--json"])
        let first = json.json()?.arrayValue?.first
        #expect(first?["app"] == .string(playerApp) && first?["device"]?["name"] == .string("Players TV"), "\(json)")
        #expect(first?["state"]?["uri"] == .string(media.sweep) && first?["state"]?["paused"] == .bool(false), "\(json)")
        #expect(first?["state"]?["granularity"] == .double(0.1), "\(json)")
        let unknown = try await runBaton(["players", "No Such Device", "--no-mdns"])
        #expect(unknown.code == 68 && unknown.stderr.contains("No Such Device") && !unknown.stderr.contains("traceback"), "\(unknown)")

        let watcher = try RunningScript(command: ["players", tv.address.description, "--watch", "--json"])
        try await watcher.waitForLine("added") { $0.contains(#""event":"added""#) }
        try await watcher.after(mpv.command(.array([.string("set_property"), .string("pause"), .bool(true)])), prints: #"{"app":"\#(playerApp)","change":"paused""#)
        try await watcher.after(mpv.command(.array([.string("seek"), .double(40), .string("absolute")])), prints: #"{"app":"\#(playerApp)","change":"position_jumped""#)
        watcher.process.signal(SIGTERM)
        #expect(await watcher.exitCode() == 128 + SIGTERM, "\(watcher.transcript)")
        mpv.close()
        await tv.stop()
    }

    @Test("what each bad call gets: a device with no player, an unreachable one, a bad event, a bad argument, a player's own error, a watch its dead player cannot answer")
    func badCalls() async throws {
        let tv = try await PlayerAgent.mpv("Errors TV")
        let dead = try await PlayerAgent.mpv("Dead TV", executable: "/nonexistent/mpv", waitForPlayer: false)
        // The watch fails as the player does, and holds nothing open: the run ends.
        let watched = try await runBaton(["run", "-e", """
            local p = assert(baton.player("\(dead.address)"))
            print(p:on("changed", print))
            """])
        #expect(watched.code == 0 && watched.stdout.hasPrefix("nil\tplayer_failed\t") && watched.stdout.hasSuffix("\tplayer_failed\n"), "\(watched)")
        await dead.stop()
        try await withAgent { plain in
            let result = try await runBaton(["run", "-e", """
                print(baton.player("\(plain.address)"))
                print(baton.player("127.0.0.1:1"))
                local p = assert(baton.player("\(tv.address)"))
                print(pcall(p.on, p, "bogus", print))
                print(pcall(p.seek, p, "far"))
                print(p:play("/nonexistent/file.flac"))
                print(p:seek(-5) ~= nil or "refused")
                """])
            #expect(result.code == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 6, "\(result)")
            #expect(lines.first?.hasPrefix("nil\tapp_not_installed\t") == true && lines.first?.hasSuffix("has no app that answers baton.playback\tnot_found") == true, "\(result)")
            #expect(lines.dropFirst().first?.hasPrefix("nil\tremote_system_unavailable\t") == true, "\(result)")
            #expect(lines.dropFirst(2).first?.contains("baton.player: p:on: event must be \"changed\" or \"closed\", got bogus") == true, "\(result)")
            #expect(lines.dropFirst(3).first?.contains("baton.player: p:seek: position must be a number, got string") == true, "\(result)")
            #expect(lines.dropFirst(4).first?.hasPrefix("nil\tcannot_open\t") == true && lines.dropFirst(4).first?.hasSuffix("media_unavailable") == true, "\(result)")
        }
        await tv.stop()
    }
}

/// `baton run SCRIPT` running in the background, as the holder of the shared test account:
/// what it prints, as it prints it.
struct RunningScript: Sendable {
    let process: ChildProcess
    let directory: TemporaryDirectory

    init(_ source: String) throws {
        let directory = try TemporaryDirectory("baton-script")
        let path = directory.file("script.lua")
        try source.write(toFile: path, atomically: true, encoding: .utf8)
        try self.init(command: ["run", path], in: directory)
    }

    /// `baton ARGUMENTS...` in the background.
    init(command arguments: [String], in directory: TemporaryDirectory? = nil) throws {
        let directory = try directory ?? TemporaryDirectory("baton-script")
        self.directory = directory
        process = try ChildProcess(
            try BatonBinary.get().path, arguments, environment: ChildProcess.environment(["XDG_CONFIG_HOME": TestAccount.shared.home.path]),
            stdout: directory.file("out"), stderr: directory.file("err"))
    }

    var lines: [String] { (directory.read("out") ?? "").split(separator: "\n").map(String.init) }
    var transcript: String { "--- stdout ---\n\(directory.read("out") ?? "")--- stderr ---\n\(directory.read("err") ?? "")---" }

    /// Waits (at most `limit` seconds: a guard against hangs) until it printed a line
    /// `condition` accepts; throws with what it printed otherwise.
    func waitForLine(_ what: String, from start: Int = 0, within limit: Double = 20, _ condition: (String) -> Bool) async throws {
        func seen() -> Bool { lines.dropFirst(start).contains(where: condition) }
        guard await eventually(within: limit, { seen() || !process.isRunning }), seen() else {
            throw AgentFailure("the script \(process.isRunning ? "did not print \(what) within \(Int(limit)) s" : "ended first"):\n\(transcript)")
        }
    }

    /// Does `action` and waits for a line that begins with `prefix` among those printed after
    /// it began.
    func after<T: Sendable>(_ action: @autoclosure () -> EventLoopFuture<T>, prints prefix: String) async throws {
        let mark = lines.count
        _ = try await action().get()
        try await waitForLine(prefix, from: mark) { $0.hasPrefix(prefix) }
    }

    /// Its exit code, once it ends (killed after 20 s).
    func exitCode() async -> Int32? {
        if let code = await process.exit.wait(within: 20) { return code }
        process.signal(SIGKILL)
        return nil
    }
}
