@testable import BatonAgent
import BatonCore
import Foundation
import Testing

/// How the players' own events become changes, event by event (the real players' events are
/// in BatonNetTests' PlayerEventsTests).
@Suite("Players' events as changes")
struct PlayerChangeTrackerTests {
    func event(_ name: String, _ fields: [JSON.Member] = []) -> MPVEvent {
        MPVEvent(name: name, fields: .object([JSON.Member("event", .string(name))] + fields))
    }

    func property(_ id: Int64, _ value: Bool) -> MPVEvent {
        event("property-change", [JSON.Member("id", .int(id)), JSON.Member("data", .bool(value))])
    }

    @Test("mpv: the observations' first values say how things stand; a start, a seek, a pause, the end, a stop are each one change")
    func mpv() {
        var tracker = MPVChangeTracker()
        let pause = MPVChangeTracker.pauseObservation, idle = MPVChangeTracker.idleObservation
        let events: [(MPVEvent, PlayerChange?)] = [
            (property(pause, false), nil), (property(idle, true), nil),
            (event("start-file"), nil), (property(idle, false), nil), (event("seek"), nil), (event("playback-restart"), .started),
            (property(pause, true), .paused), (property(pause, false), .resumed),
            (event("seek"), nil), (event("playback-restart"), .positionJumped),
            // loadfile replace while playing: the old file stops, the new one starts.
            (event("end-file", [JSON.Member("reason", .string("stop"))]), nil), (event("start-file"), nil),
            (property(pause, true), nil), (event("playback-restart"), .trackChanged),
            (event("end-file", [JSON.Member("reason", .string("eof"))]), .ended), (property(idle, true), nil),
            (event("start-file"), nil), (event("playback-restart"), .started),
            (event("end-file", [JSON.Member("reason", .string("stop"))]), nil), (property(idle, true), .stopped),
        ]
        for (i, (event, expected)) in events.enumerated() {
            #expect(tracker.take(event) == expected, "event \(i): \(event.name) \(event.fields)")
        }
    }

    @Test("mpv attached while it plays: no start is made up, its pause and seek are changes")
    func mpvAttached() {
        var tracker = MPVChangeTracker()
        #expect(tracker.take(property(MPVChangeTracker.idleObservation, false)) == nil)
        #expect(tracker.take(property(MPVChangeTracker.pauseObservation, false)) == nil)
        #expect(tracker.take(property(MPVChangeTracker.pauseObservation, true)) == .paused)
        #expect(tracker.take(event("playback-restart")) == .positionJumped)
    }

    @Test("MPD: each status after idle, against the last: started, paused, resumed, a jump, the next song, the end, a stop")
    func mpd() {
        var tracker = MPDChangeTracker()
        let t0 = Date()
        func at(_ s: Double) -> Date { t0.addingTimeInterval(s) }
        typealias S = MPDChangeTracker.Snapshot
        let snapshots: [(S, PlayerChange?)] = [
            (S(state: "stop", songID: nil, elapsed: nil, duration: nil, at: at(0)), nil),
            (S(state: "play", songID: "1", elapsed: 0, duration: 60, at: at(1)), .started),
            (S(state: "pause", songID: "1", elapsed: 2, duration: 60, at: at(3)), .paused),
            (S(state: "play", songID: "1", elapsed: 2, duration: 60, at: at(10)), .resumed),
            // Played on for 2 s: where it should be is no jump; 30 s further is.
            (S(state: "play", songID: "1", elapsed: 4.1, duration: 60, at: at(12)), nil),
            (S(state: "play", songID: "1", elapsed: 40, duration: 60, at: at(13)), .positionJumped),
            (S(state: "play", songID: "2", elapsed: 0, duration: 60, at: at(14)), .trackChanged),
            (S(state: "play", songID: "2", elapsed: 59.8, duration: 60, at: at(14.1)), .positionJumped),
            (S(state: "stop", songID: nil, elapsed: nil, duration: nil, at: at(14.5)), .ended),
            (S(state: "play", songID: "2", elapsed: 0, duration: 60, at: at(20)), .started),
            (S(state: "stop", songID: nil, elapsed: nil, duration: nil, at: at(25)), .stopped),
        ]
        for (i, (snapshot, expected)) in snapshots.enumerated() {
            #expect(tracker.take(snapshot) == expected, "snapshot \(i): \(snapshot)")
        }
    }
}
