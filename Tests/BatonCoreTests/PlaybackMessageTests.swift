import BatonCore
import Foundation
import Testing

@Suite("baton.playback's messages and the handoff report")
struct PlaybackMessageTests {
    @Test("every command reads back from its message as it was")
    func roundTrip() throws {
        let commands: [PlaybackCommand] = [
            .state, .pause, .resume, .stop, .seek(12.5), .seekBy(-0.04), .volume(40), .mute(true), .mute(false), .watch, .unwatch,
            .play(.init(queue: ["/m/a.flac"], position: 7.25)),
            .play(.init(queue: ["/m/a.flac", "/m/b.flac"], index: 1, position: 3, paused: true, volume: 55, muted: true)),
        ]
        for command in commands {
            #expect(try PlaybackCommand(message: command.message) == command)
        }
    }

    @Test("a request baton.playback does not take is bad_request, saying why", arguments: [
        (["x": "y"], "command = state, play"),
        (["command": "dance"], "unknown command \"dance\""),
        (["command": 3], "command = state, play"),
        (["command": "seek"], "position must be a number of seconds and is required"),
        (["command": "seek", "position": "ten"], "position must be a number"),
        (["command": "seek", "position": 1, "by": 2], "give position or by, not both"),
        (["command": "volume", "level": 150], "level must be from 0 to 100"),
        (["command": "play"], "play needs uri"),
        (["command": "play", "uri": "/a", "queue": ["/b"]], "play needs uri"),
        (["command": "play", "queue": ["/a", 2]], "queue must be an array of URIs"),
        (["command": "play", "queue": ["/a"], "index": 1], "index must be an integer from 0 to 0"),
        (["command": "play", "uri": "/a", "position": -1], "position must not be negative"),
        (["command": "play", "uri": ""], "nothing to play"),
        (["command": "play", "uri": "/a", "paused": "yes"], "paused must be true or false"),
        (["command": "mute", "muted": 1], "muted must be true or false"),
    ] as [(ValueDictionary, String)])
    func badRequests(message: ValueDictionary, says: String) {
        #expect {
            _ = try PlaybackCommand(message: message)
        } throws: { error in
            guard case .badRequest(let why) = error as? PlaybackFailure else { return false }
            return why.contains(says)
        }
    }

    @Test("a player's granularity and seek latency ride in its state and proof as seconds; a figure no player could have is left out")
    func timing() {
        let at = Date(timeIntervalSince1970: 1_795_500_000.125)
        let state = PlaybackState(uri: "/m/a.flac", position: 3, paused: false, at: at, positionGranularity: 0.01, seekLatency: 1.05)
        #expect(state.message["granularity"] == .double(0.01) && state.message["seek_latency"] == .double(1.05))
        #expect(PlaybackState(message: state.message) == state)
        let proof = PlaybackProof(position: 7.25, at: at, rate: 1, positionGranularity: 1, seekLatency: 0.45)
        #expect(PlaybackProof(message: proof.message) == proof)
        // A player that says nothing says nothing: the handoff falls back on its own figures.
        #expect(PlaybackState(at: at).message["granularity"] == nil)
        var wild = state.message
        wild["granularity"] = .double(-1)
        wild["seek_latency"] = .string("soon")
        let read = PlaybackState(message: wild)
        #expect(read?.positionGranularity == nil && read?.seekLatency == nil)
    }

    @Test("a change a watching channel is sent: its name, and the state after it")
    func change() {
        let state = PlaybackState(uri: "/m/a.flac", position: 3, paused: true, at: Date(timeIntervalSince1970: 1_795_500_000))
        let message = PlayerChange.paused.message(state: state)
        #expect(message["event"] == .string("changed") && message["change"] == .string("paused"))
        #expect(message["state"] == .dictionary(state.message))
        #expect(PlayerChange.allCases.map(\.rawValue) == ["started", "track_changed", "paused", "resumed", "ended", "stopped", "position_jumped"])
    }

    @Test("a state, a proof and a failure read back from their messages; a reply of neither is none of them")
    func replies() {
        let at = Date(timeIntervalSince1970: 1_795_500_000.125)
        let state = PlaybackState(
            uri: "/m/a.flac", title: "A", position: 12.5, duration: 60, paused: false, rate: 1, volume: 80,
            queue: ["/m/a.flac", "/m/b.flac"], index: 0, at: at)
        #expect(PlaybackState(message: state.message) == state)
        let idle = PlaybackState(at: at)
        #expect(PlaybackState(message: idle.message) == idle)
        let proof = PlaybackProof(position: 7.25, at: at, rate: 0.99)
        #expect(PlaybackProof(message: proof.message) == proof)
        for failure in [PlaybackFailure.cannotOpen("gone"), .didNotPlay("ended"), .player("dead"), .badRequest("what")] {
            #expect(PlaybackFailure(message: failure.message) == failure)
        }
        #expect(PlaybackState(message: ["position": 1.0]) == nil)
        #expect(PlaybackFailure(message: state.message) == nil)
    }

    @Test("a handoff report reads back from its message (as a kept report is read)")
    func report() {
        var report = HandoffReport(status: .sourceStopFailed, detail: "the source did not pause")
        report.uri = "/m/a.flac"
        report.positionAtSource = 12.5
        report.positionAtTarget = 12.49
        report.positionErrorMs = -10
        report.overlapMs = 3.5
        report.latencyMs = 340
        report.phases = [("find", 5), ("start", 310)]
        report.corrected = true
        report.key = "k"
        report.deviceStatus = "remote_system_unavailable"
        #expect(HandoffReport(message: report.message) == report)
        #expect(HandoffReport(message: ["status": "nope"]) == nil)
    }
}
