import BatonCore

/// Turns an MPRIS player's signals into ``PlayerChange``s: plain values, no I/O. It hears
/// `PropertiesChanged` (`Metadata`'s `xesam:url` and `mpris:trackid`, `PlaybackStatus`) and
/// `Seeked`. MPRIS does not say why a player stopped: a stop the agent was not asked for is
/// taken as the end of the track.
struct MPRISChangeTracker {
    /// The track loaded (its URL and id) and the status, as last said.
    private var url: String?
    private var trackID: String?
    private var status: String?
    /// Whether its stop (or end) was told already, until something plays again.
    private var over = false
    /// Whether the agent asked the player to stop (its next stop is no end).
    var stopAsked = false
    /// Whether the agent is starting a track itself (`play`): the pauses, seeks and resumes
    /// that takes are no changes of their own; the new track is.
    var starting = false

    /// How things stand, from a reading (no change is told for it).
    mutating func know(_ properties: MPRISProperties) {
        url = properties.url
        trackID = properties.trackID
        status = properties.status
        over = properties.url == nil || properties.status == "Stopped"
    }

    /// The changes `signal` says, in order.
    mutating func take(_ signal: MPRISSignal) -> [PlayerChange] {
        switch signal {
        case .seeked:
            return starting || over ? [] : [.positionJumped]
        case .owner:
            return []
        case .changed(let values, _):
            var changes: [PlayerChange] = []
            if let metadata = values["Metadata"]?.dictionaryValue {
                let newURL = metadata["xesam:url"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                let newID = metadata["mpris:trackid"]?.stringValue
                switch (url, newURL) {
                case (nil, _?):
                    changes.append(.started)
                    over = false
                case (let before?, _?) where before != newURL || (newID != nil && newID != trackID):
                    changes.append(.trackChanged)
                    over = false
                case (_?, nil):
                    changes += end()
                default:
                    break
                }
                url = newURL
                trackID = newID
            }
            if let now = values["PlaybackStatus"]?.stringValue {
                let before = status
                status = now
                switch now {
                case "Stopped": changes += end()
                case "Playing" where before == "Paused" && !starting: changes.append(.resumed)
                case "Paused" where before == "Playing" && !starting: changes.append(.paused)
                default: break
                }
                if now != "Stopped", url != nil { over = false }
            }
            return changes
        }
    }

    /// A stop, or (not asked for) an end; told once.
    private mutating func end() -> [PlayerChange] {
        guard !over else { return [] }
        over = true
        defer { stopAsked = false }
        return [stopAsked ? .stopped : .ended]
    }
}
