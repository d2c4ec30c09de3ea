@testable import BatonAgent
import BatonCore
import Foundation
import Testing

/// `player = { backend = "mpris", ... }` as agent.lua gives it, what the MPRIS signals tell
/// watchers, and the proof's rule for coarse positions: plain values, no bus.
@Suite("The MPRIS backend's fields, changes and proof")
struct MPRISBackendTests {
    @Test("an app with an MPRIS player: its bus name, bus address and timeout read as written; the player answers baton.playback")
    func configured() async throws {
        let agent = try await startAgent("""
            app{ id = "org.example.vlc", schemes = {"file"},
                 player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.vlc", bus = "unix:path=/run/user/1000/bus", timeout = 3 } }
            app{ id = "org.example.mpv", player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.mpv.instance42" } }
            """)
        defer { agent.stop() }
        let vlc = try #require(agent.configuration.app("org.example.vlc")?.player?.backend as? MPRISBackend)
        #expect(vlc.busName == "org.mpris.MediaPlayer2.vlc" && vlc.address == "unix:path=/run/user/1000/bus" && vlc.timeout == 3)
        let mpv = try #require(agent.configuration.app("org.example.mpv")?.player?.backend as? MPRISBackend)
        #expect(mpv.busName == "org.mpris.MediaPlayer2.mpv.instance42" && mpv.address == nil && mpv.timeout == 2)
        #expect(agent.configuration.app("org.example.vlc")?.info.services == ["baton.playback"])
    }

    @Test("each mistake in its fields stops the agent saying which", arguments: [
        ("app{ id = 'a', player = { backend = 'mpris' } }", "agent.lua:1: app a: player: bus_name is required (org.mpris.MediaPlayer2.NAME)"),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = 'org.example.Player' } }",
         "agent.lua:1: app a: player: bus_name must be a D-Bus name org.mpris.MediaPlayer2.NAME (letters, digits, _ and -, parts joined by dots), got \"org.example.Player\""),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = 'org.mpris.MediaPlayer2.' } }",
         "agent.lua:1: app a: player: bus_name must be a D-Bus name org.mpris.MediaPlayer2.NAME (letters, digits, _ and -, parts joined by dots), got \"org.mpris.MediaPlayer2.\""),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = \"org.mpris.MediaPlayer2.x',y\" } }",
         "agent.lua:1: app a: player: bus_name must be a D-Bus name org.mpris.MediaPlayer2.NAME (letters, digits, _ and -, parts joined by dots), got \"org.mpris.MediaPlayer2.x',y\""),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = 'org.mpris.MediaPlayer2.vlc', bus = '/run/bus' } }",
         "agent.lua:1: app a: player: bus must be a D-Bus address such as unix:path=/run/user/1000/bus, got \"/run/bus\""),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = 'org.mpris.MediaPlayer2.vlc', timeout = 0 } }",
         "agent.lua:1: app a: player: timeout must be a number of seconds above 0 and at most 600"),
        ("app{ id = 'a', player = { backend = 'mpris', bus_name = 'org.mpris.MediaPlayer2.vlc', socket = '/x' } }",
         "agent.lua:1: app a: player: unknown field 'socket' (fields: backend, bus, bus_name, on_stop, timeout)"),
    ])
    func mistakes(config: String, expected: String) async {
        #expect(await configurationError(config) == expected)
    }

    @Test("signals tell watchers what changed: started, paused, resumed, jumped, another track, stopped, or ended when the position had reached the end; the agent's own play tells only its track")
    func changes() {
        var tracker = MPRISChangeTracker()
        tracker.know(MPRISProperties(["PlaybackStatus": .string("Stopped"), "Metadata": .dictionary([:])]))
        func metadata(_ url: String?, _ id: String) -> MPRISSignal {
            var values: [String: DBusValue] = ["mpris:trackid": .string(id)]
            if let url { values["xesam:url"] = .string(url) }
            return .changed(["Metadata": .dictionary(values)], invalidated: [])
        }
        func status(_ status: String) -> MPRISSignal { .changed(["PlaybackStatus": .string(status)], invalidated: []) }

        tracker.starting = true
        #expect(tracker.take(metadata("file:///a.flac", "/1")) == [.started])
        #expect(tracker.take(status("Paused")) == [])
        #expect(tracker.take(.seeked(5_000_000)) == [])
        #expect(tracker.take(status("Playing")) == [])
        tracker.starting = false
        #expect(tracker.take(status("Paused")) == [.paused])
        #expect(tracker.take(status("Playing")) == [.resumed])
        #expect(tracker.take(.seeked(9_000_000)) == [.positionJumped])
        #expect(tracker.take(metadata("file:///b.flac", "/2")) == [.trackChanged])
        // The same file opened again is another track by its id (VLC's ids count up).
        #expect(tracker.take(metadata("file:///b.flac", "/3")) == [.trackChanged])
        // Not asked for, at the end by the last reading: the end (VLC keeps the track and says
        // Stopped; mpv drops it too: told once).
        let playing: [String: DBusValue] = [
            "PlaybackStatus": .string("Playing"), "Position": .int(58_500_000),
            "Metadata": .dictionary(["xesam:url": .string("file:///b.flac"), "mpris:trackid": .string("/3"), "mpris:length": .int(60_000_000)]),
        ]
        tracker.heard(MPRISProperties(playing), at: Date().addingTimeInterval(-1))
        #expect(tracker.take(status("Stopped")) == [.ended])
        #expect(tracker.take(metadata(nil, "/noplaylist")) == [])
        #expect(tracker.take(metadata("file:///a.flac", "/0")) == [.started])
        #expect(tracker.take(status("Playing")) == [])
        // Not asked for, mid-track: a stop from elsewhere.
        tracker.heard(MPRISProperties(playing), at: Date().addingTimeInterval(-0.2))
        #expect(tracker.take(status("Stopped")) == [.stopped])
        // After a stop, what plays next starts.
        #expect(tracker.take(metadata("file:///a.flac", "/1")) == [.started])
        #expect(tracker.take(status("Playing")) == [])
        tracker.stopAsked = true
        #expect(tracker.take(.changed(["PlaybackStatus": .string("Stopped"), "Metadata": .dictionary(["mpris:trackid": .string("/noplaylist")])], invalidated: []))
            == [.stopped])
    }

    @Test("the proof allows for a position that moves in steps, but not for one that stands still or runs")
    func coarseProof() {
        let start = Date()
        func reading(_ seconds: Double, at offset: TimeInterval) -> PositionReading {
            PositionReading(seconds: seconds, asked: start.addingTimeInterval(offset), answered: start.addingTimeInterval(offset + 0.001))
        }
        // VLC's steps of 0.28 s: 0.9 s of wall time shows 0.56 or 1.12 s of movement.
        for moved in [0.56, 0.84, 1.12] {
            #expect((try? MPRISPlayer.proof(from: reading(10, at: 0), to: reading(10 + moved, at: 0.9), of: "x", granularity: 0.3).get()) != nil, "\(moved)")
        }
        #expect((try? MPRISPlayer.proof(from: reading(10, at: 0), to: reading(10, at: 0.9), of: "x", granularity: 0.3).get()) == nil)
        #expect((try? MPRISPlayer.proof(from: reading(10, at: 0), to: reading(12, at: 0.9), of: "x", granularity: 0.3).get()) == nil)
        let proof = try? MPRISPlayer.proof(from: reading(10, at: 0), to: reading(10.3, at: 0.3), of: "x", granularity: 0.1).get()
        #expect(proof?.position == 10 && proof?.rate.map { abs($0 - 1) < 0.01 } == true)
    }

    @Test("a player's URL and the URI asked for name the same file whatever their escaping; state gives a file URL as its path")
    func urls() {
        #expect(MPRISPlayer.sameMedia("file:///tmp/a%20b.flac", "/tmp/a b.flac"))
        #expect(MPRISPlayer.sameMedia("file:///tmp/a%20b.flac", "file:///tmp/a b.flac"))
        #expect(!MPRISPlayer.sameMedia("file:///tmp/a.flac", "/tmp/b.flac"))
        #expect(!MPRISPlayer.sameMedia(nil, "/tmp/a.flac"))
        #expect(MPRISPlayer.stateURI("file:///tmp/a%20b.flac") == "/tmp/a b.flac")
        #expect(MPRISPlayer.stateURI("https://example.com/a.mp3") == "https://example.com/a.mp3")
        #expect((try? MPRISPlayer.openURI("/tmp/a b.flac")) == "file:///tmp/a%20b.flac")
    }
}
