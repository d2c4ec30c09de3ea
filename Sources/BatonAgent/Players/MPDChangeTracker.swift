import BatonCore
import Foundation

/// Turns what MPD's `status` says after each `idle player` into ``PlayerChange``s, by how it
/// differs from the last: plain values, no I/O.
struct MPDChangeTracker {
    /// What one `status` said.
    struct Snapshot: Equatable {
        /// `play`, `pause` or `stop`.
        var state: String
        var songID: String?
        var elapsed: Double?
        var duration: Double?
        /// When it was read.
        var at: Date

        init(state: String, songID: String?, elapsed: Double?, duration: Double?, at: Date) {
            self.state = state
            self.songID = songID
            self.elapsed = elapsed
            self.duration = duration
            self.at = at
        }

        /// The snapshot MPD's `status` answer holds.
        init(status: [MPDPair], at: Date) {
            self.init(
                state: status["state"] ?? "stop", songID: status["songid"], elapsed: status["elapsed"].flatMap(Double.init),
                duration: status["duration"].flatMap(Double.init), at: at)
        }
    }

    /// How far a position may move other than by playing before it counts as a jump.
    static let jump = 0.5

    private var last: Snapshot?

    /// The change `now` is since the last snapshot, if any; the first only says how things stand.
    mutating func take(_ now: Snapshot) -> PlayerChange? {
        defer { last = now }
        guard let last else { return nil }
        switch (last.state, now.state) {
        case ("stop", "stop"): return nil
        case ("stop", _): return .started
        case (_, "stop"):
            // It stopped by itself at the end of what it played, or was stopped before that.
            if let elapsed = last.elapsed, let duration = last.duration,
               elapsed + now.at.timeIntervalSince(last.at) >= duration - Self.jump {
                return .ended
            }
            return .stopped
        default: break
        }
        if last.songID != now.songID { return .trackChanged }
        if last.state != now.state { return now.state == "pause" ? .paused : .resumed }
        guard let before = last.elapsed, let after = now.elapsed else { return nil }
        let expected = before + (now.state == "play" ? now.at.timeIntervalSince(last.at) : 0)
        return abs(after - expected) > Self.jump ? .positionJumped : nil
    }
}
