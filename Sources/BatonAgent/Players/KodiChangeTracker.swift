import BatonCore

/// Turns Kodi's notifications into ``PlayerChange``s: plain values, no I/O. It hears
/// `Player.OnAVStart` (something began to play), `Player.OnPause`, `Player.OnResume`,
/// `Player.OnSeek` and `Player.OnStop` (`end` true when the item ran out).
struct KodiChangeTracker {
    /// Whether something is loaded, as far as the notifications heard tell.
    private(set) var loaded = false

    /// The change `notification` makes, if any.
    mutating func take(_ notification: KodiNotification) -> PlayerChange? {
        switch notification.method {
        case "Player.OnAVStart":
            defer { loaded = true }
            return loaded ? .trackChanged : .started
        case "Player.OnPause": return loaded ? .paused : nil
        case "Player.OnResume": return loaded ? .resumed : nil
        case "Player.OnSeek": return loaded ? .positionJumped : nil
        case "Player.OnStop":
            guard loaded else { return nil }
            loaded = false
            return notification.data["end"]?.boolValue == true ? .ended : .stopped
        default: return nil
        }
    }

    /// Starts again from `loaded` (a new connection, or after the agent's own doings).
    mutating func reset(loaded: Bool) {
        self.loaded = loaded
    }
}
