/// A change in what a player does, as the player's own events report it (never found by
/// polling): what a `baton.playback` channel that asked to `watch` is sent, as
/// `{event = "changed", change = NAME, state = {...}}`.
public enum PlayerChange: String, Sendable, CaseIterable {
    /// It began playing, from nothing loaded.
    case started
    /// It moved to another item: the next of its queue, or one it was told to play.
    case trackChanged = "track_changed"
    case paused, resumed
    /// What it played reached its end.
    case ended
    /// It was stopped: nothing is loaded.
    case stopped
    /// Its position jumped (a seek) instead of moving on by itself.
    case positionJumped = "position_jumped"

    /// The message a watching channel is sent for the change, with the state after it.
    public func message(state: PlaybackState) -> ValueDictionary {
        ["event": "changed", "change": .string(rawValue), "state": .dictionary(state.message)]
    }
}
