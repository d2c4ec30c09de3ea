#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a player proved it plays what it was asked to: the answer to `play` of
/// `baton.playback`.
public struct PlaybackProof: Sendable, Equatable {
    /// Where it was first found once loaded, and when that was read (the player's clock).
    public var position: Double
    public var at: Date
    /// How fast the position advanced across two readings (1 is real time); nil when it was
    /// asked to stay paused.
    public var rate: Double?
    /// The player's position granularity and seek latency, in seconds, as in
    /// ``PlaybackState``; nil when it does not say.
    public var positionGranularity: Double?
    public var seekLatency: Double?

    public init(position: Double, at: Date, rate: Double?, positionGranularity: Double? = nil, seekLatency: Double? = nil) {
        self.position = position
        self.at = at
        self.rate = rate
        self.positionGranularity = positionGranularity
        self.seekLatency = seekLatency
    }
}

/// Why a player did not do as asked; in a `baton.playback` reply, `error` (``code``) and
/// `detail`.
public enum PlaybackFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// It could not open the media (`cannot_open`).
    case cannotOpen(String)
    /// It loaded the media but did not play it as asked: it ended at once, or did not advance
    /// (`did_not_play`).
    case didNotPlay(String)
    /// The player failed: no answer by the deadline, gone, or not talking its protocol
    /// (`player_failed`).
    case player(String)
    /// The request was not one `baton.playback` takes (`bad_request`).
    case badRequest(String)

    /// The failure's name in replies.
    public var code: String {
        switch self {
        case .cannotOpen: "cannot_open"
        case .didNotPlay: "did_not_play"
        case .player: "player_failed"
        case .badRequest: "bad_request"
        }
    }

    /// The failure named `code`, with `detail`; an unknown code counts as the player's.
    public init(code: String, detail: String) {
        switch code {
        case "cannot_open": self = .cannotOpen(detail)
        case "did_not_play": self = .didNotPlay(detail)
        case "bad_request": self = .badRequest(detail)
        default: self = .player(detail)
        }
    }

    public var description: String {
        switch self {
        case .cannotOpen(let text), .didNotPlay(let text), .player(let text), .badRequest(let text): text
        }
    }
}
