import BatonAgent
import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Handoffs between real agents with real players (mpv, MPD, Lua providers), checked from
/// outside: each player's own socket says what it plays, and the report says the rest.
@Suite("Playback handoff", .serialized, .timeLimit(.minutes(2)))
struct HandoffTests {
    let client = makeClient()

    /// Starts `uri` on `device` and waits until it plays.
    func play(_ uri: String, from position: Double = 10, on device: PlayerAgent, paused: Bool = false) async throws {
        _ = try await device.playback(client, .play(.init(queue: [uri], position: position, paused: paused)))
    }

    func handoff(_ from: PlayerAgent, _ to: PlayerAgent, _ change: (inout HandoffOptions) -> Void = { _ in }) async -> HandoffReport {
        var options = HandoffOptions()
        options.timeout = .seconds(30)
        change(&options)
        return await client.handoff(from: from.target, to: to.target, options: options)
    }

    /// The player's own reading of `time-pos`, `pause` and `path`.
    func reading(_ mpv: MPVConnection) async throws -> (position: Double?, paused: Bool, path: String?) {
        let state = try await mpv.state().get()
        return (state.position, state.paused, state.uri)
    }

    @Test("mpv to mpv: the target's mpv plays from where the source was, the source's mpv is paused, and the report says so")
    func mpvToMPV() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone", kind: "phone")
        let tv = try await PlayerAgent.mpv("Living Room TV")
        try await play(media.sweep, from: 12.5, on: phone)
        let report = await handoff(phone, tv)
        #expect(report.status == .success, "\(report.message)")
        #expect(report.uri == media.sweep)
        #expect(report.phases.map(\.name) == ["find", "open", "read", "start", "confirm", "switch"])
        let source = try await reading(try await phone.mpv())
        let target = try await reading(try await tv.mpv())
        #expect(source.paused)
        #expect(!target.paused)
        #expect(target.path == media.sweep)
        // Where each really is, by its own socket: the target has moved on from where the source stopped.
        let stoppedAt = try #require(source.position), playsAt = try #require(target.position)
        #expect(playsAt >= stoppedAt - 0.25)
        // mpv's reading as it pauses settles by up to its audio buffer (tens of ms) after.
        #expect(abs((report.positionAtSource ?? 0) - stoppedAt) < 0.25)
        #expect(abs(try #require(report.positionErrorMs)) <= 250)
        #expect(report.overlapMs != nil)
        await phone.stop()
        await tv.stop()
    }

    @Test("a paused source gives a paused target at the same position; the source stays paused")
    func pausedSource() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        try await play(media.sweep, from: 20, on: phone, paused: true)
        let report = await handoff(phone, tv)
        #expect(report.status == .success, "\(report.message)")
        #expect(report.paused)
        let target = try await reading(try await tv.mpv())
        #expect(target.paused)
        #expect(abs((target.position ?? 0) - 20) < 0.01)
        #expect(try await reading(try await phone.mpv()).paused)
        await phone.stop()
        await tv.stop()
    }

    @Test("the queue and its entry go along: the target's mpv has the same playlist, at the same entry")
    func queueCarried() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        let queue = [media.file("a.flac"), media.file("b.flac"), media.file("c.flac")]
        _ = try await phone.playback(client, .play(.init(queue: queue, index: 1, position: 5)))
        let report = await handoff(phone, tv)
        #expect(report.status == .success, "\(report.message)")
        let state = try await tv.mpv().state().get()
        #expect(state.queue == queue)
        #expect(state.index == 1)
        #expect(state.uri == queue[1])
        await phone.stop()
        await tv.stop()
    }

    @Test("volume copy gives the target the source's volume; keep leaves the target's own")
    func volumePolicies() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        _ = try await tv.playback(client, .volume(70))
        _ = try await phone.playback(client, .play(.init(queue: [media.sweep], position: 10, volume: 40)))
        var report = await handoff(phone, tv) { $0.volume = .keep }
        #expect(report.status == .success, "\(report.message)")
        #expect(try await tv.mpv().state().get().volume == 70)
        report = await handoff(tv, phone) { $0.volume = .keep }
        #expect(report.status == .success, "\(report.message)")
        report = await handoff(phone, tv) { $0.volume = .copy }
        #expect(report.status == .success, "\(report.message)")
        #expect(try await tv.mpv().state().get().volume == 40)
        await phone.stop()
        await tv.stop()
    }

    @Test("a source that plays nothing: nothing_playing, and the target is not touched")
    func nothingPlaying() async throws {
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        let report = await handoff(phone, tv)
        #expect(report.status == .nothingPlaying)
        #expect(!report.rolledBack)
        #expect(try await reading(try await tv.mpv()).path == nil)
        await phone.stop()
        await tv.stop()
    }

    @Test("a file the target cannot read: media_unavailable before either player is touched; both play on as they did")
    func mediaUnavailable() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        let only = media.file("only-here.flac")
        try FileManager.default.copyItem(atPath: media.sweep, toPath: only)
        try await play(only, on: phone)
        // mpv keeps the file it opened; nobody else can open it now.
        try FileManager.default.removeItem(atPath: only)
        // The TV plays something of its own, and goes on with it.
        try await play(media.file("a.flac"), on: tv)
        let report = await handoff(phone, tv)
        #expect(report.status == .mediaUnavailable, "\(report.message)")
        #expect(report.detail.contains("only-here.flac"))
        #expect(!report.rolledBack)
        // The report's phases end with the one the failure cut short.
        #expect(report.phases.map(\.name) == ["find", "open", "read", "start"])
        let source = try await reading(try await phone.mpv())
        #expect(!source.paused)
        let target = try await reading(try await tv.mpv())
        #expect(target.path == media.file("a.flac"))
        #expect(!target.paused)
        await phone.stop()
        await tv.stop()
    }

    @Test("an unreachable target, or one without a player app: target_unavailable; the source plays on")
    func targetUnavailable() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        try await play(media.sweep, on: phone)
        var report = await client.handoff(from: phone.target, to: DeviceTarget(DeviceAddress(host: "127.0.0.1", port: 1)))
        #expect(report.status == .targetUnavailable)
        #expect(report.deviceStatus == "remote_system_unavailable")
        try await withAgent { plain in
            report = await client.handoff(from: phone.target, to: DeviceTarget(plain.address))
            #expect(report.status == .targetUnavailable)
            #expect(report.detail.contains("no app that answers baton.playback"))
            var options = HandoffOptions()
            options.app = "org.example.absent"
            report = await client.handoff(from: phone.target, to: DeviceTarget(plain.address), options: options)
            #expect(report.status == .sourceUnavailable || report.status == .targetUnavailable)
        }
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
    }

    @Test("an unreachable source: source_unavailable")
    func sourceUnavailable() async throws {
        let tv = try await PlayerAgent.mpv("TV")
        let report = await client.handoff(from: DeviceTarget(DeviceAddress(host: "127.0.0.1", port: 1)), to: tv.target)
        #expect(report.status == .sourceUnavailable)
        #expect(report.deviceStatus == "remote_system_unavailable")
        await tv.stop()
    }

    @Test("the same key twice: the second call returns the first one's report, marked repeated, and does nothing")
    func sameKeyTwice() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        try await play(media.sweep, on: phone)
        let key = "test-\(UUID())"
        let first = await handoff(phone, tv) { $0.key = key }
        #expect(first.status == .success, "\(first.message)")
        #expect(!first.repeated)
        // Were it done again, the paused phone would give nothing_playing.
        let second = await handoff(phone, tv) { $0.key = key }
        #expect(second.status == .success)
        #expect(second.repeated)
        #expect(second.positionAtSource == first.positionAtSource)
        await phone.stop()
        await tv.stop()
    }

    @Test("a target that ignores the start offset is put right by one corrective seek")
    func ignoredOffsetCorrected() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let lua = try await PlayerAgent.lua("Lua TV", .ignoresOffset)
        try await play(media.sweep, from: 30, on: phone)
        let report = await handoff(phone, lua)
        #expect(report.status == .success, "\(report.message)")
        #expect(report.corrected)
        let state = try #require(PlaybackState(message: try await lua.playback(client, .state)))
        #expect(abs((state.position ?? 0) - 30) < 2)
        await phone.stop()
        await lua.stop()
    }

    @Test("a target that ignores the offset and the seek: target_failed, rolled back, the source plays on")
    func ignoredSeekFails() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let lua = try await PlayerAgent.lua("Lua TV", .ignoresOffsetAndSeek)
        try await play(media.sweep, from: 30, on: phone)
        let report = await handoff(phone, lua)
        #expect(report.status == .targetFailed, "\(report.message)")
        #expect(report.corrected)
        #expect(report.rolledBack)
        #expect(!(try await reading(try await phone.mpv())).paused)
        #expect(PlaybackState(message: try await lua.playback(client, .state))?.uri == nil)
        await phone.stop()
        await lua.stop()
    }

    @Test("a source that will not pause: source_stop_failed; the target plays, nothing is rolled back")
    func sourceStopFailed() async throws {
        let media = try await Media.make()
        let stubborn = try await PlayerAgent.lua("Stubborn phone", .refusesToPause)
        let tv = try await PlayerAgent.mpv("TV")
        _ = try await stubborn.playback(client, .play(.init(queue: [media.sweep], position: 15)))
        let report = await handoff(stubborn, tv)
        #expect(report.status == .sourceStopFailed, "\(report.message)")
        #expect(report.detail.contains("would not pause"))
        #expect(!report.rolledBack)
        #expect(!(try await reading(try await tv.mpv())).paused)
        #expect(PlaybackState(message: try await stubborn.playback(client, .state))?.paused == false)
        await stubborn.stop()
        await tv.stop()
    }

    @Test("the target's real mpv killed while it proves it plays: target_failed, the source plays on")
    func targetMPVKilledMidHandoff() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        try await play(media.sweep, on: phone)
        let tvMPV = try await tv.mpv()
        let pid = try #require(try await tvMPV.property("pid").get().intValue)
        let client = self.client
        let running = Task { await client.handoff(from: phone.target, to: tv.target) }
        // The proof takes two readings 0.3 s apart: the file is loaded well before it ends.
        #expect(await eventually { (try? await tvMPV.property("path").get().stringValue) != nil })
        kill(pid_t(pid), SIGKILL)
        let report = await running.value
        #expect(report.status == .targetFailed, "\(report.message)")
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
        await tv.stop()
    }

    @Test("a Lua-provider player hands off to mpv and back")
    func luaProviderPlayer() async throws {
        let media = try await Media.make()
        let lua = try await PlayerAgent.lua("Lua phone")
        let tv = try await PlayerAgent.mpv("TV")
        _ = try await lua.playback(client, .play(.init(queue: [media.sweep], position: 15)))
        var report = await handoff(lua, tv)
        #expect(report.status == .success, "\(report.message)")
        #expect(abs((try await reading(try await tv.mpv()).position ?? 0) - 15) < 2)
        report = await handoff(tv, lua)
        #expect(report.status == .success, "\(report.message)")
        #expect(try await reading(try await tv.mpv()).paused)
        await lua.stop()
        await tv.stop()
    }

    @Test("the target's player dies as it is told to play: target_failed, the source plays on")
    func targetPlayerDies() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let directory = try TemporaryDirectory("baton-player")
        let tv = try await PlayerAgent.mpv("TV", executable: try fakeMPV("die-on-load", in: directory), in: directory)
        try await play(media.sweep, on: phone)
        let report = await handoff(phone, tv)
        #expect(report.status == .targetFailed, "\(report.message)")
        #expect(report.rolledBack)
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
        await tv.stop()
    }

    @Test("a target player that answers garbage, or nothing: target_unavailable within the deadlines, the source plays on")
    func badPlayers() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        try await play(media.sweep, on: phone)
        for mode in ["garbage", "silent"] {
            let directory = try TemporaryDirectory("baton-player")
            let tv = try await PlayerAgent.mpv("TV", executable: try fakeMPV(mode, in: directory), in: directory)
            let report = await handoff(phone, tv)
            #expect(report.status == .targetUnavailable, "\(mode): \(report.message)")
            #expect(report.detail.contains("player"), "\(mode): \(report.detail)")
            await tv.stop()
        }
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
    }

    @Test("a handoff past its deadline: timeout, rolled back, the source plays on")
    func timeout() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let slow = try await PlayerAgent.lua("Slow TV", .slow(seconds: 5))
        try await play(media.sweep, on: phone)
        let report = await handoff(phone, slow) { $0.timeout = .seconds(1) }
        #expect(report.status == .timeout, "\(report.message)")
        #expect(report.rolledBack)
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
        await slow.stop()
    }

    @Test("a cancelled handoff rolls back: the source plays on")
    func cancelled() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let slow = try await PlayerAgent.lua("Slow TV", .slow(seconds: 2))
        try await play(media.sweep, on: phone)
        let client = self.client
        let task = Task { await client.handoff(from: phone.target, to: slow.target) }
        try await Task.sleep(for: .milliseconds(500))
        task.cancel()
        let report = await task.value
        #expect(report.status == .cancelled, "\(report.message)")
        #expect(report.rolledBack)
        #expect(!(try await reading(try await phone.mpv())).paused)
        await phone.stop()
        await slow.stop()
    }

    @Test("mpv to MPD and MPD to mpv: MPD's own status says it plays from where mpv was, and back")
    func mpvAndMPD() async throws {
        let media = try await Media.make()
        let directory = try TemporaryDirectory("baton-mpd")
        let mpd = try await RunningMPD.start(music: media.directory.path, in: directory)
        let speaker = try await PlayerAgent.mpd("Speaker", port: mpd.port, music: media.directory.path)
        let phone = try await PlayerAgent.mpv("Phone")
        try await play(media.sweep, from: 8, on: phone)
        var report = await handoff(phone, speaker)
        #expect(report.status == .success, "\(report.message)")
        let status = try await mpd.connection.command("status").get()
        #expect(status["state"] == "play")
        let elapsed = try #require(status["elapsed"].flatMap(Double.init))
        let stoppedAt = try #require(try await reading(try await phone.mpv()).position)
        #expect(elapsed >= stoppedAt - 0.25)
        #expect(try await mpd.connection.command("currentsong").get()["file"] == "sweep.flac")

        report = await handoff(speaker, phone)
        #expect(report.status == .success, "\(report.message)")
        #expect(try await mpd.connection.command("status").get()["state"] == "pause")
        let back = try await reading(try await phone.mpv())
        #expect(!back.paused)
        #expect((back.position ?? 0) >= elapsed)
        await phone.stop()
        await speaker.stop()
        await mpd.stop()
    }

    @Test("baton handoff: success on stdout and exit 0; --json; a failure's status on stderr with its exit code; usage errors exit 2")
    func commandLine() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await PlayerAgent.mpv("TV")
        try await play(media.sweep, on: phone)
        let (from, to) = ("\(phone.address)", "\(tv.address)")
        var result = try await runBaton(["handoff", from, to, "--timeout", "30s"])
        #expect(result.code == 0, "\(result)")
        #expect(result.stdout.hasPrefix("success: \(to) plays \(media.sweep) from "), "\(result)")
        #expect(result.stdout.contains("phases: find"))
        #expect(try await reading(try await phone.mpv()).paused)

        result = try await runBaton(["handoff", to, from, "--json", "--source", "stop", "--timeout", "30s"])
        #expect(result.code == 0, "\(result)")
        let report = try #require(result.json())
        #expect(report["status"]?.stringValue == "success")
        #expect(report["position_error_ms"]?.doubleValue != nil)
        #expect(try await reading(try await tv.mpv()).path == nil)

        result = try await runBaton(["handoff", from, "127.0.0.1:1"])
        #expect(result.code == 69)
        #expect(result.stderr.hasPrefix("target_unavailable: "), "\(result)")
        result = try await runBaton(["handoff", to, from])
        #expect(result.code == 1)
        #expect(result.stderr.hasPrefix("nothing_playing: "), "\(result)")
        for bad in [["--source", "drop"], ["--volume", "loud"], ["--timeout", "0s"], ["--key", ""]] {
            result = try await runBaton(["handoff", from, to] + bad)
            #expect(result.code == 2, "\(bad): \(result)")
            #expect(result.stderr.contains("Invalid"), "\(bad): \(result)")
        }
        await phone.stop()
        await tv.stop()
    }

    @Test("the audio the target produced starts where the source was: the sweep's pitch at its first samples")
    func audioAtHandoffPosition() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let out = media.file("tv.pcm")
        // mpv's pcm output writes as fast as it decodes, not in real time: the handoff is of a
        // paused source, and the target's first audio is what it writes when resumed.
        let tv = try await PlayerAgent.mpv("TV", args: [
            "--no-video", "--ao=pcm", "--ao-pcm-file=\(out)", "--ao-pcm-waveheader=no", "--audio-format=s16",
            "--audio-channels=mono", "--audio-samplerate=44100",
        ])
        try await play(media.sweep, from: 27.5, on: phone, paused: true)
        let report = await handoff(phone, tv)
        #expect(report.status == .success, "\(report.message)")
        _ = try await tv.playback(client, .resume)
        #expect(await eventually(within: 20) { (try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int ?? 0) ?? 0 > 44100 * 2 })
        let samples = try pcmSamples(out)
        let first = try #require(samples.firstIndex { abs($0) > 1000 })
        let heard = frequency(of: samples[first..<min(samples.count, first + 4410)], rate: 44100)
        // 27.5 s into the sweep is 549 Hz, rising 34 Hz a second: 10 Hz is 0.3 s either way.
        #expect(abs(heard - Media.frequency(at: 27.5)) < 10, "heard \(heard) Hz")
        await phone.stop()
        await tv.stop()
    }

    @Test("an agent killed with SIGKILL leaves its mpv playing; the next agent on that socket attaches to it and stops it not")
    func attachesToSurvivingMPV() async throws {
        let media = try await Media.make()
        let directory = try TemporaryDirectory("baton-player")
        let first = try await PlayerAgent.mpv("TV", in: directory)
        try await play(media.sweep, on: first)
        let pid = try #require(try await first.mpv().property("pid").get().intValue)
        await first.agent.stop(SIGKILL)
        #expect(kill(pid_t(pid), 0) == 0)
        let second = try await PlayerAgent.mpv("TV", in: directory)
        #expect(await eventually { second.agent.log.contains("attached to the mpv listening on") })
        let state = try #require(PlaybackState(message: try await second.playback(client, .state)))
        #expect(state.uri == media.sweep)
        #expect(!state.paused)
        #expect(try await second.mpv().property("pid").get().intValue == pid)
        await second.stop()
        // It attached, so it left this mpv running.
        #expect(kill(pid_t(pid), 0) == 0)
        kill(pid_t(pid), SIGKILL)
    }

    @Test("an mpv the agent started is restarted when it dies, and stopped when the agent stops")
    func restartsAndStopsItsMPV() async throws {
        let tv = try await PlayerAgent.mpv("TV")
        let pid = try #require(try await tv.mpv().property("pid").get().intValue)
        kill(pid_t(pid), SIGKILL)
        var restarted: Int64?
        let came = await eventually(within: 30) {
            guard let mpv = try? await tv.mpv() else { return false }
            defer { mpv.close() }
            restarted = try? await mpv.property("pid").get().intValue
            return restarted != nil && restarted != pid
        }
        #expect(came, "no new mpv; the agent's log:\n\(tv.agent.log)")
        await tv.stop()
        if let restarted {
            #expect(await eventually { kill(pid_t(restarted), 0) != 0 })
        }
    }
}

/// The 16-bit mono samples of a raw pcm file.
func pcmSamples(_ path: String) throws -> [Int16] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

/// The frequency of a sine from its zero crossings.
func frequency(of samples: ArraySlice<Int16>, rate: Double) -> Double {
    var crossings: [Int] = []
    var previous = samples.first ?? 0
    for (i, sample) in zip(samples.indices, samples) {
        if previous < 0 && sample >= 0 { crossings.append(i) }
        previous = sample
    }
    guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
    return Double(crossings.count - 1) * rate / Double(last - first)
}
