@testable import BatonAgent
import BatonCore
import Foundation
import NIOCore
import Testing

/// The MPRIS backend against a real headless mpv with mpv-mpris, on a private D-Bus bus of
/// each test's own; what the player does is read back on mpv's own JSON IPC as well.
@Suite("An MPRIS player: mpv with mpv-mpris", .serialized, .timeLimit(.minutes(2)))
struct MPRISMPVTests {
    @Test("play answers with its proof: mpv plays the file from the position asked, advancing in real time, as its IPC and MPRIS say")
    func playsFromPosition() async throws {
        try await withMPRISMPV { fixture in
            let asked = Date()
            let proof = try await fixture.player.play(playRequest(fixture.media.sweep, from: 12.5)).get()
            // The proof's first reading is from 12.5 (not 0), no further on than the time since allows.
            expectStarted(from: 12.5, at: proof.position, after: proof.at.timeIntervalSince(asked))
            #expect((proof.rate ?? 0) > 0, "\(proof)")
            #expect(proof.positionGranularity == 0.1 && proof.seekLatency != nil)
            // mpv itself plays that file, from there, in real time.
            #expect(try await fixture.ipc.property("path").get().stringValue.map { MPRISPlayer.sameMedia($0, fixture.media.sweep) } == true)
            #expect(try await fixture.ipc.property("pause").get().boolValue == false)
            let first = try await position(fixture.ipc)
            expectStarted(from: 12.5, at: first.seconds, after: first.answered.timeIntervalSince(asked))
            try await Task.sleep(for: .milliseconds(500))
            let second = try await position(fixture.ipc)
            expectRealTime(first, second)
            // MPRIS's Position, read by the test on the player's own interface, agrees with mpv's.
            try await withMPRISConnection("org.mpris.MediaPlayer2.mpv", bus: fixture.bus.address, on: fixture.loop) { raw in
                let mpris = try await mprisPosition(raw)
                let mpv = try await position(fixture.ipc)
                #expect(abs(mpris.seconds - mpv.seconds) < 0.3 + mpv.answered.timeIntervalSince(mpris.asked), "MPRIS \(mpris.seconds), mpv \(mpv.seconds)")
            }
            let state = try await fixture.player.state().get()
            #expect(state.uri == fixture.media.sweep && state.title == "sweep.flac", "\(state)")
            #expect(!state.paused && state.isPlaying && state.rate == 1)
            #expect(state.duration.map { abs($0 - 60) < 0.1 } == true, "\(state)")
            #expect(state.queue == [fixture.media.sweep] && state.index == 0)
            #expect(state.positionGranularity == 0.1)
            expectStarted(from: 12.5, at: try #require(state.position), after: state.at.timeIntervalSince(asked))
        }
    }

    @Test("play paused and muted holds at the position with the volume at 0; unmuted, the volume before comes back")
    func pausedMuted() async throws {
        try await withMPRISMPV { fixture in
            try await fixture.player.control(.volume(70)).get()
            #expect(try await fixture.ipc.property("volume").get().doubleValue.map { abs($0 - 70) < 0.5 } == true)
            let proof = try await fixture.player.play(playRequest(fixture.media.sweep, from: 20, paused: true, muted: true)).get()
            #expect(proof.rate == nil)
            #expect(abs(proof.position - 20) < 0.35, "\(proof)")
            #expect(try await fixture.ipc.property("pause").get().boolValue == true)
            #expect(try await fixture.ipc.property("volume").get().doubleValue == 0)
            let held = try await position(fixture.ipc)
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await position(fixture.ipc).seconds == held.seconds, "paused, it does not move")
            let state = try await fixture.player.state().get()
            #expect(state.paused && state.volume == 0, "\(state)")
            try await fixture.player.control(.mute(false)).get()
            #expect(try await fixture.ipc.property("volume").get().doubleValue.map { abs($0 - 70) < 0.5 } == true)
            try await fixture.player.control(.resume).get()
            let first = try await position(fixture.ipc)
            try await Task.sleep(for: .milliseconds(400))
            expectRealTime(first, try await position(fixture.ipc))
        }
    }

    @Test("pause, resume, seek, seek by, volume, mute and stop each do what they say, as mpv's IPC reads them")
    func controls() async throws {
        try await withMPRISMPV { fixture in
            let player = fixture.player, ipc = fixture.ipc
            _ = try await player.play(playRequest(fixture.media.sweep, from: 5)).get()

            try await player.control(.pause).get()
            #expect(try await ipc.property("pause").get().boolValue == true)
            #expect(try await player.state().get().paused)

            try await player.control(.resume).get()
            #expect(try await ipc.property("pause").get().boolValue == false)
            #expect(try await player.state().get().isPlaying)

            let seeking = Date()
            try await player.control(.seek(40)).get()
            let landed = try await position(ipc)
            expectStarted(from: 40 - 0.3, at: landed.seconds, after: landed.answered.timeIntervalSince(seeking) + 0.3)

            try await player.control(.pause).get()
            let before = try await position(ipc).seconds
            try await player.control(.seekBy(-10)).get()
            let after = try await position(ipc).seconds
            #expect(abs(after - (before - 10)) < 0.35, "\(before) - 10 went to \(after)")

            try await player.control(.volume(35)).get()
            #expect(try await ipc.property("volume").get().doubleValue.map { abs($0 - 35) < 0.5 } == true)
            #expect(try await player.state().get().volume.map { abs($0 - 35) < 0.5 } == true)
            try await player.control(.mute(true)).get()
            #expect(try await ipc.property("volume").get().doubleValue == 0)
            try await player.control(.mute(false)).get()
            #expect(try await ipc.property("volume").get().doubleValue.map { abs($0 - 35) < 0.5 } == true)

            try await player.control(.stop).get()
            let stopped = try await player.state().get()
            #expect(stopped.uri == nil && stopped.position == nil && !stopped.isPlaying, "\(stopped)")
            #expect(try await ipc.property("idle-active").get().boolValue == true)
        }
    }

    @Test("a file mpv cannot open is cannot_open; a start past the end is did_not_play; mpv still plays after")
    func failures() async throws {
        try await withMPRISMPV { fixture in
            let garbage = fixture.media.directory + "/garbage.flac"
            try "this is not audio".write(toFile: garbage, atomically: true, encoding: .utf8)
            let bad = await #expect(throws: PlaybackFailure.self) { try await fixture.player.play(playRequest(garbage, from: 0)).get() }
            if case .cannotOpen? = bad {} else { Issue.record("not cannotOpen: \(String(describing: bad))") }
            let pastEnd = await #expect(throws: PlaybackFailure.self) { try await fixture.player.play(playRequest(fixture.media.sweep, from: 100)).get() }
            if case .didNotPlay(let text)? = pastEnd { #expect(text.contains("60.000 s long"), "\(text)") } else { Issue.record("not didNotPlay: \(String(describing: pastEnd))") }
            let again = try await fixture.player.play(playRequest(fixture.media.sweep, from: 3)).get()
            #expect(again.position >= 2.7, "\(again)")
        }
    }

    @Test("the same file played again from elsewhere seeks within it, and a second file replaces it")
    func playAgain() async throws {
        try await withMPRISMPV { fixture in
            _ = try await fixture.player.play(playRequest(fixture.media.sweep, from: 30)).get()
            let asked = Date()
            let again = try await fixture.player.play(playRequest(fixture.media.sweep, from: 8)).get()
            expectStarted(from: 8, at: again.position, after: again.at.timeIntervalSince(asked))
            let other = fixture.media.directory + "/other.flac"
            let sox = try Spawned(["sox", "-n", "-r", "44100", "-c", "1", other, "synth", "20", "sine", "440"])
            #expect(await sox.wait() == 0)
            let replaced = Date()
            let proof = try await fixture.player.play(playRequest(other, from: 4)).get()
            expectStarted(from: 4, at: proof.position, after: proof.at.timeIntervalSince(replaced))
            #expect(try await fixture.ipc.property("path").get().stringValue.map { MPRISPlayer.sameMedia($0, other) } == true)
            #expect(try await fixture.player.state().get().uri == other)
        }
    }

    @Test("watchers hear what mpv does, whoever asks: paused, resumed, a jump, the end of the track, a stop; not the steps of the agent's own play")
    func changes() async throws {
        try await withMPRISMPV { fixture in
            let heard = HeardChanges()
            try await fixture.loop.submit { heard.stop = fixture.player.watch { heard.append($0) } }.get()
            defer { fixture.loop.execute { heard.stop?() } }
            _ = try await fixture.player.play(playRequest(fixture.media.sweep, from: 20)).get()
            #expect(await eventually { heard.changes == [.started] }, "\(heard.changes)")
            // mpv driven by someone else, on its own IPC.
            _ = try await fixture.ipc.command(.array([.string("set_property"), .string("pause"), .bool(true)])).get()
            #expect(await eventually { heard.changes.last == .paused }, "\(heard.changes)")
            _ = try await fixture.ipc.command(.array([.string("set_property"), .string("pause"), .bool(false)])).get()
            #expect(await eventually { heard.changes.last == .resumed }, "\(heard.changes)")
            _ = try await fixture.ipc.command(.array([.string("seek"), .double(58.5), .string("absolute")])).get()
            #expect(await eventually { heard.changes.last == .positionJumped }, "\(heard.changes)")
            // It plays to the end (where Seeked put it tells the end from a stop).
            #expect(await eventually { heard.changes.last == .ended }, "\(heard.changes)")
            #expect(heard.changes == [.started, .paused, .resumed, .positionJumped, .ended], "\(heard.changes)")
            _ = try await fixture.player.play(playRequest(fixture.media.sweep, from: 5)).get()
            #expect(await eventually { heard.changes.last == .started }, "\(heard.changes)")
            _ = try await fixture.ipc.command(.array([.string("stop")])).get()
            #expect(await eventually { heard.changes.last == .stopped }, "\(heard.changes)")
            #expect(heard.changes.suffix(2) == [.started, .stopped], "\(heard.changes)")
        }
    }

    @Test("the bus killed mid-session: player_failed; a new bus at its address, with mpv on it, is reached again and plays")
    func busKilled() async throws {
        try await withMPRISMPV { fixture in
            _ = try await fixture.player.play(playRequest(fixture.media.sweep, from: 10)).get()
            kill(fixture.bus.process.pid, SIGKILL)
            _ = await fixture.bus.process.wait()
            #expect(await eventually { (try? await fixture.player.state().get()) == nil })
            let lost = await #expect(throws: PlaybackFailure.self) { try await fixture.player.state().get() }
            expectPlayerFailed(lost, saying: "org.mpris.MediaPlayer2.mpv")

            let bus = try await TestBus.start(in: fixture.media.directory, output: "dbus-daemon-2.out")
            #expect(bus.address == fixture.bus.address)
            let mpv = try startMPRISMPV(bus: bus, socket: fixture.media.directory + "/mpv2.sock", output: fixture.media.directory + "/mpv2.out")
            #expect(await waitOnBus(fixture.player), "the player did not reach the new bus")
            let asked = Date()
            let proof = try await fixture.player.play(playRequest(fixture.media.sweep, from: 4)).get()
            expectStarted(from: 4, at: proof.position, after: proof.at.timeIntervalSince(asked))
            await mpv.stop()
            await bus.process.stop()
        }
    }

    @Test("an agent whose app has player = { backend = \"mpris\", ... } plays through baton.playback with proof, and its state says the player's granularity")
    func throughTheAgent() async throws {
        try await withMPRISMPV { fixture in
            let agent = try await startAgent("""
                app{ id = "org.example.mpris", player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.mpv",
                     bus = "\(fixture.bus.address)", timeout = 10 } }
                """)
            defer { agent.stop() }
            let service = try #require(agent.nativeServices[Agent.ProviderKey(app: "org.example.mpris", service: "baton.playback")])
            let channel = NativeChannel { _, _ in fixture.loop.makeSucceededFuture(ServiceReply(status: .success)) }
            let asked = Date()
            let played = try await service.serve(["command": "play", "uri": .string(fixture.media.sweep), "position": 9.5], from: channel).get()
            let proof = try #require(PlaybackProof(message: played.message ?? [:]), "\(played)")
            expectStarted(from: 9.5, at: proof.position, after: proof.at.timeIntervalSince(asked))
            #expect(proof.positionGranularity == 0.1)
            let first = try await position(fixture.ipc)
            expectStarted(from: 9.5, at: first.seconds, after: first.answered.timeIntervalSince(asked))
            let answered = try await service.serve(["command": "pause"], from: channel).get()
            let state = try #require(PlaybackState(message: answered.message ?? [:]), "\(answered)")
            #expect(state.paused && state.uri == fixture.media.sweep && state.positionGranularity == 0.1, "\(state)")
            #expect(try await fixture.ipc.property("pause").get().boolValue == true)
            let nobody = try await startAgent("""
                app{ id = "org.example.none", player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.nobody", bus = "\(fixture.bus.address)" } }
                """)
            defer { nobody.stop() }
            let none = try #require(nobody.nativeServices[Agent.ProviderKey(app: "org.example.none", service: "baton.playback")])
            let failed = try await none.serve(["command": "state"], from: channel).get()
            #expect(failed.message?["error"] == .string("player_failed") && failed.message?["detail"] == .string("org.mpris.MediaPlayer2.nobody is not on the bus"),
                    "\(failed)")
        }
    }

    @Test("mpv killed mid-session: player_failed saying it is not on the bus; a new mpv is found again by its name and plays")
    func killedAndBack() async throws {
        try await withMPRISMPV { fixture in
            _ = try await fixture.player.play(playRequest(fixture.media.sweep, from: 10)).get()
            kill(fixture.mpv.pid, SIGKILL)
            _ = await fixture.mpv.wait()
            // The bus notices the connection is gone: the next calls fail, saying why.
            #expect(await eventually { (try? await fixture.player.state().get()) == nil })
            let gone = await #expect(throws: PlaybackFailure.self) { try await fixture.player.state().get() }
            expectPlayerFailed(gone, saying: "org.mpris.MediaPlayer2.mpv is not on the bus")
            let play = await #expect(throws: PlaybackFailure.self) { try await fixture.player.play(playRequest(fixture.media.sweep, from: 1)).get() }
            expectPlayerFailed(play, saying: "is not on the bus")
            let control = await #expect(throws: PlaybackFailure.self) { try await fixture.player.control(.pause).get() }
            expectPlayerFailed(control, saying: "is not on the bus")

            let again = try startMPRISMPV(bus: fixture.bus, socket: fixture.media.directory + "/mpv2.sock", output: fixture.media.directory + "/mpv2.out")
            defer { Task { await again.stop() } }
            #expect(await waitOnBus(fixture.player), "the new mpv was not found")
            let asked = Date()
            let proof = try await fixture.player.play(playRequest(fixture.media.sweep, from: 6)).get()
            expectStarted(from: 6, at: proof.position, after: proof.at.timeIntervalSince(asked))
            await again.stop()
        }
    }
}

/// The backend where no player is: a bus name nobody owns, or no bus at all.
@Suite("An MPRIS player that is not there", .serialized, .timeLimit(.minutes(1)))
struct MPRISAbsentTests {
    @Test("a bus name nobody owns: state, play and each control fail at once with player_failed saying it is not on the bus")
    func nobody() async throws {
        let directory = NSTemporaryDirectory() + "baton-mpris-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bus = try await TestBus.start(in: directory)
        defer { Task { await bus.process.stop() } }
        try await withLoop { loop in
            let player = makeMPRISPlayer("org.mpris.MediaPlayer2.nobody", bus: bus.address, on: loop)
            player.start()
            let started = Date()
            let state = await #expect(throws: PlaybackFailure.self) { try await player.state().get() }
            expectPlayerFailed(state, saying: "org.mpris.MediaPlayer2.nobody is not on the bus")
            let play = await #expect(throws: PlaybackFailure.self) { try await player.play(playRequest("/nonexistent.flac", from: 0)).get() }
            expectPlayerFailed(play, saying: "org.mpris.MediaPlayer2.nobody is not on the bus")
            for command: PlaybackCommand in [.pause, .resume, .stop, .seek(3), .seekBy(1), .volume(50), .mute(true)] {
                let failed = await #expect(throws: PlaybackFailure.self) { try await player.control(command).get() }
                expectPlayerFailed(failed, saying: "org.mpris.MediaPlayer2.nobody is not on the bus")
            }
            // At once: no deadline was waited out.
            #expect(Date().timeIntervalSince(started) < 5)
            try await player.shutdown().get()
        }
        await bus.process.stop()
    }

    @Test("no bus at the address: player_failed saying it cannot reach the bus")
    func noBus() async throws {
        try await withLoop { loop in
            let player = makeMPRISPlayer("org.mpris.MediaPlayer2.mpv", bus: "unix:path=/nonexistent/bus", on: loop)
            let failed = await #expect(throws: PlaybackFailure.self) { try await player.state().get() }
            expectPlayerFailed(failed, saying: "cannot reach the bus of org.mpris.MediaPlayer2.mpv")
            try await player.shutdown().get()
        }
    }
}

/// The changes a watcher heard, in order.
final class HeardChanges: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [PlayerChange] = []
    /// Ends the watch; the player's loop's only.
    var stop: (() -> Void)?

    func append(_ change: PlayerChange) { lock.withLock { kept.append(change) } }
    var changes: [PlayerChange] { lock.withLock { kept } }
}
