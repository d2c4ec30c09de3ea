import BatonCore
import Foundation

/// One reading of a player's position: the seconds it said, and when it was asked and
/// answered (the reading is taken to be in the middle).
struct PositionReading: Sendable {
    let seconds: Double
    let asked: Date
    let answered: Date

    /// When the position was read: the middle of the round trip.
    var at: Date { asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2) }

    /// The proof that playback advanced at about real speed from `first` to `second`: the
    /// position moved by at least 0.8 times the shortest time that can have passed between the
    /// two readings and at most 1.2 times the longest (with 50 ms for the players' own
    /// granularity); else ``PlaybackFailure/didNotPlay(_:)`` saying how far it moved.
    static func proof(from first: PositionReading, to second: PositionReading, of uri: String) -> Result<PlaybackProof, PlaybackFailure> {
        let moved = second.seconds - first.seconds
        let least = second.asked.timeIntervalSince(first.answered), most = second.answered.timeIntervalSince(first.asked)
        guard moved >= 0.8 * least - 0.05, moved <= 1.2 * most + 0.05 else {
            return .failure(.didNotPlay(
                "\(uri) moved \(String(format: "%.3f", moved)) s in \(String(format: "%.3f", least))–\(String(format: "%.3f", most)) s"))
        }
        return .success(PlaybackProof(position: first.seconds, at: first.at, rate: moved / second.at.timeIntervalSince(first.at)))
    }
}
