@testable import BatonAgent
import BatonCore
import Foundation
import NIOCore
import Testing

/// The MPRIS backend against a real headless VLC (it refuses root: it runs as a user the test
/// makes, on a bus of that user's that lets root's client in). Positions are read back on
/// VLC's own MPRIS interface by a connection of the test's.
@Suite("An MPRIS player: VLC", .serialized, .timeLimit(.minutes(2)))
struct MPRISVLCTests {
    @Test("play answers with its proof from the position asked; seek, pause, resume and volume do what they say, as VLC reads them")
    func playSeekPause() async throws {
        try await withVLC { fixture in
            let player = fixture.player, raw = fixture.raw
            let asked = Date()
            let proof = try await player.play(playRequest(fixture.media.sweep, from: 12.5)).get()
            expectStarted(from: 12.5 - 0.3, at: proof.position, after: proof.at.timeIntervalSince(asked) + 0.3)
            #expect((proof.rate ?? 0) > 0, "\(proof)")
            #expect(proof.positionGranularity == 0.3)
            // VLC itself plays from there, in real time (to its granularity).
            let first = try await mprisPosition(raw)
            expectStarted(from: 12.5 - 0.3, at: first.seconds, after: first.answered.timeIntervalSince(asked) + 0.3)
            try await Task.sleep(for: .milliseconds(1200))
            let second = try await mprisPosition(raw)
            let moved = second.seconds - first.seconds
            #expect(moved > 0.9 * second.asked.timeIntervalSince(first.answered) - 0.35
                    && moved < 1.1 * second.answered.timeIntervalSince(first.asked) + 0.35, "moved \(moved)")
            let state = try await player.state().get()
            #expect(state.uri == fixture.media.sweep && state.isPlaying, "\(state)")
            #expect(state.duration.map { abs($0 - 60) < 0.1 } == true, "\(state)")
            #expect(try await raw.property("PlaybackStatus").get().stringValue == "Playing")

            let seeking = Date()
            try await player.control(.seek(40)).get()
            let landed = try await mprisPosition(raw)
            expectStarted(from: 40 - 0.3, at: landed.seconds, after: landed.answered.timeIntervalSince(seeking) + 0.3)

            try await player.control(.pause).get()
            #expect(try await raw.property("PlaybackStatus").get().stringValue == "Paused")
            let held = try await mprisPosition(raw).seconds
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await mprisPosition(raw).seconds == held, "paused, it does not move")
            #expect(try await player.state().get().paused)

            try await player.control(.seekBy(-10)).get()
            #expect(abs(try await mprisPosition(raw).seconds - (held - 10)) < 0.35)

            try await player.control(.resume).get()
            #expect(try await raw.property("PlaybackStatus").get().stringValue == "Playing")

            try await player.control(.volume(40)).get()
            #expect(try await raw.property("Volume").get().doubleValue.map { abs($0 - 0.4) < 0.01 } == true)
            try await player.control(.mute(true)).get()
            #expect(try await raw.property("Volume").get().doubleValue == 0)
            try await player.control(.mute(false)).get()
            #expect(try await raw.property("Volume").get().doubleValue.map { abs($0 - 0.4) < 0.01 } == true)
        }
    }

    @Test("play paused holds at the position; VLC's Position (an int64 where it declares int32) reads right")
    func paused() async throws {
        try await withVLC { fixture in
            let proof = try await fixture.player.play(playRequest(fixture.media.sweep, from: 25, paused: true)).get()
            #expect(proof.rate == nil)
            #expect(abs(proof.position - 25) < 0.35, "\(proof)")
            #expect(try await fixture.raw.property("PlaybackStatus").get().stringValue == "Paused")
            let held = try await mprisPosition(fixture.raw).seconds
            #expect(abs(held - 25) < 0.35, "\(held)")
            let state = try await fixture.player.state().get()
            #expect(state.paused && state.position.map { abs($0 - 25) < 0.35 } == true, "\(state)")
        }
    }

    @Test("a file VLC cannot open is cannot_open; VLC still plays after")
    func cannotOpen() async throws {
        try await withVLC { fixture in
            let garbage = fixture.media.directory + "/garbage.flac"
            try "this is not audio".write(toFile: garbage, atomically: true, encoding: .utf8)
            let bad = await #expect(throws: PlaybackFailure.self) { try await fixture.player.play(playRequest(garbage, from: 0)).get() }
            if case .cannotOpen? = bad {} else { Issue.record("not cannotOpen: \(String(describing: bad))") }
            let asked = Date()
            let again = try await fixture.player.play(playRequest(fixture.media.sweep, from: 3)).get()
            expectStarted(from: 3 - 0.3, at: again.position, after: again.at.timeIntervalSince(asked) + 0.3)
        }
    }
}

/// A test's VLC: its user, its bus, VLC on it, the player attached, a raw connection of the
/// test's, and the media (readable by VLC's user); all stopped at the end.
struct VLCFixture {
    let bus: TestBus
    let vlc: Spawned
    let player: MPRISPlayer
    let raw: MPRISConnection
    let media: TestMedia
    let loop: any EventLoop
}

func withVLC(_ body: (VLCFixture) async throws -> Void) async throws {
    let user = try await TestUser.ensure()
    let media = try await TestMedia.make()
    defer { try? FileManager.default.removeItem(atPath: media.directory) }
    let busDirectory = media.directory + "/bus", home = media.directory + "/home"
    for folder in [busDirectory, home] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        user.own(folder)
    }
    try await withLoop { loop in
        let bus = try await TestBus.start(in: busDirectory, user: user)
        let vlc = try startVLC(bus: bus, user: user, home: home, output: media.directory + "/vlc.out")
        let player = makeMPRISPlayer("org.mpris.MediaPlayer2.vlc", bus: bus.address, on: loop)
        var raw: MPRISConnection?
        func stop() async {
            raw?.close()
            _ = try? await player.shutdown().get()
            await vlc.stop()
            await bus.process.stop()
        }
        do {
            player.start()
            guard await waitOnBus(player) else {
                let said = (try? String(contentsOfFile: media.directory + "/vlc.out", encoding: .utf8)) ?? ""
                throw MPRISError.notOnBus("VLC did not join the bus within 20 s: \(said)")
            }
            let opened = try await MPRISConnection.open(
                busName: "org.mpris.MediaPlayer2.vlc", address: bus.address, callTimeout: .seconds(10), on: loop, logger: .init(label: "test.vlc")).get()
            raw = opened
            try await body(VLCFixture(bus: bus, vlc: vlc, player: player, raw: opened, media: media, loop: loop))
        } catch {
            await stop()
            throw error
        }
        await stop()
    }
}
