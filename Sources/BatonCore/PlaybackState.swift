#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a player is doing, as the `state` command of `baton.playback` answers (issue 13):
/// read from mpv's properties or MPD's status, the same fields either way.
public struct PlaybackState: Sendable, Equatable {
    /// What is loaded: a path or a URI; nil when nothing is.
    public var uri: String?
    public var title: String?
    /// Where playback is, in seconds, as read at ``at``; nil when nothing is loaded.
    public var position: Double?
    /// How long the media is, in seconds, when the player knows.
    public var duration: Double?
    /// Whether playback is paused (or stopped: not advancing).
    public var paused: Bool
    /// The speed: 1 is real time.
    public var rate: Double
    /// The volume, 0 to 100 (mpv may go past 100); nil when the player has no mixer.
    public var volume: Double?
    /// The queue, and which entry of it plays (0-based).
    public var queue: [String]
    public var index: Int?
    /// When ``position`` was read: the middle of the round trip that read it.
    public var at: Date
    /// How far apart the positions the player reports are, in seconds (mpv with a null output
    /// moves in steps of 50–100 ms, Kodi of 10 ms): one reading lags by up to this much. Nil
    /// when the player does not say.
    public var positionGranularity: Double?
    /// How long a seek takes the player, in seconds, from the request to playing from where it
    /// landed (mpv ~10 ms, Kodi ~1 s). Nil when the player does not say.
    public var seekLatency: Double?

    public init(
        uri: String? = nil, title: String? = nil, position: Double? = nil, duration: Double? = nil, paused: Bool = true,
        rate: Double = 1, volume: Double? = nil, queue: [String] = [], index: Int? = nil, at: Date,
        positionGranularity: Double? = nil, seekLatency: Double? = nil
    ) {
        self.uri = uri
        self.title = title
        self.position = position
        self.duration = duration
        self.paused = paused
        self.rate = rate
        self.volume = volume
        self.queue = queue
        self.index = index
        self.at = at
        self.positionGranularity = positionGranularity
        self.seekLatency = seekLatency
    }

    /// Whether something is loaded and advancing.
    public var isPlaying: Bool { uri != nil && position != nil && !paused }
}
