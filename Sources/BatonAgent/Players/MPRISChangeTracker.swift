import BatonCore
import Foundation

/// Turns an MPRIS player's signals into ``PlayerChange``s: plain values, no I/O. It hears
/// `PropertiesChanged` (`Metadata`'s `xesam:url` and `mpris:trackid`, `PlaybackStatus`) and
/// `Seeked`. MPRIS does not say why a player stopped: a stop the agent asked for is a stop;
/// another is the track's end when the last reading puts the position within a second of its
/// length by then, else a stop.
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

    /// The last reading's position, when it was read, the track's length, and whether it played.
    private var heard: (position: Double, at: Date, length: Double, playing: Bool)?

    /// How things stand, from a reading (no change is told for it).
    mutating func know(_ properties: MPRISProperties) {
        url = properties.url
        trackID = properties.trackID
        status = properties.status
        over = properties.url == nil || properties.status == "Stopped"
    }

    /// A reading of the position (`at` when read): what tells an end from a stop.
    mutating func heard(_ properties: MPRISProperties, at: Date) {
        guard let position = properties.position, let length = properties.length, properties.url != nil else { return }
        heard = (position, at, length, properties.status == "Playing")
    }

    /// Whether the track has reached its end by `now`, by the last reading.
    private func atEnd(_ now: Date) -> Bool {
        guard let heard else { return false }
        let position = heard.position + (heard.playing ? now.timeIntervalSince(heard.at) : 0)
        return position >= heard.length - 1
    }

    /// The changes `signal`, heard at `time`, says, in order.
    mutating func take(_ signal: MPRISSignal, at time: Date = Date()) -> [PlayerChange] {
        switch signal {
        case .seeked(let microseconds):
            // Where it jumped to is a reading too.
            heard?.position = Double(microseconds) / 1e6
            heard?.at = time
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
                case (_?, _?) where over:
                    // After a stop or an end (mpv keeps the ended track's metadata), it starts anew.
                    changes.append(.started)
                    over = false
                case (let before?, _?) where before != newURL || (newID != nil && newID != trackID):
                    changes.append(.trackChanged)
                    over = false
                case (_?, nil):
                    changes += end(time)
                default:
                    break
                }
                url = newURL
                trackID = newID
            }
            if let now = values["PlaybackStatus"]?.stringValue {
                let before = status
                status = now
                if let last = heard, now != "Stopped" {
                    // Paused or resumed: where it was by now, and whether it moves on from there.
                    heard = (last.position + (last.playing ? time.timeIntervalSince(last.at) : 0), time, last.length, now == "Playing")
                }
                switch now {
                case "Stopped": changes += end(time)
                case "Playing" where before == "Paused" && !starting: changes.append(.resumed)
                case "Paused" where before == "Playing" && !starting: changes.append(.paused)
                default: break
                }
                if now != "Stopped", url != nil, over {
                    // Played again with nothing else said (the same track opened again).
                    changes.append(.started)
                    over = false
                }
            }
            return changes
        }
    }

    /// A stop, or (not asked for, at the track's end) an end; told once.
    private mutating func end(_ now: Date) -> [PlayerChange] {
        guard !over else { return [] }
        over = true
        defer {
            stopAsked = false
            heard = nil
        }
        return [!stopAsked && atEnd(now) ? .ended : .stopped]
    }
}
