import BatonCore

/// Turns mpv's events into ``PlayerChange``s: plain values, no I/O. It hears `start-file`,
/// `playback-restart`, `end-file` and the `property-change` events of the `pause` and
/// `idle-active` properties a connection observes (their first event, sent as the observation
/// starts, only says how things stand).
struct MPVChangeTracker {
    /// The ids a connection observes `pause` and `idle-active` under.
    static let pauseObservation: Int64 = 9001
    static let idleObservation: Int64 = 9002

    /// Whether a file is loaded, once known.
    private var loaded: Bool?
    private var paused: Bool?
    /// The change a file being started will be, once it plays.
    private var starting: PlayerChange?
    /// Whether the last file played to its end (its idle is no stop).
    private var ended = false

    /// The change `event` makes, if any.
    mutating func take(_ event: MPVEvent) -> PlayerChange? {
        switch event.name {
        case "start-file":
            starting = loaded == true ? .trackChanged : .started
            ended = false
            return nil
        case "playback-restart":
            if let change = starting {
                starting = nil
                loaded = true
                return change
            }
            return loaded == true ? .positionJumped : nil
        case "end-file" where event.reason == "eof":
            ended = true
            return .ended
        case "property-change":
            return property(event)
        default:
            return nil
        }
    }

    private mutating func property(_ event: MPVEvent) -> PlayerChange? {
        let value = event.fields["data"]?.boolValue
        switch (event.fields["id"]?.intValue, value) {
        case (Self.pauseObservation?, let now?):
            defer { paused = now }
            // A file being started flips pause as it loads; its start is the change.
            guard let before = paused, before != now, loaded == true, starting == nil else { return nil }
            return now ? .paused : .resumed
        case (Self.idleObservation?, let idle?):
            guard let before = loaded else {
                loaded = !idle
                return nil
            }
            guard idle, before, starting == nil else { return nil }
            loaded = false
            return ended ? nil : .stopped
        default:
            return nil
        }
    }
}
