#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PlaybackState {
    /// The state as `baton.playback` answers it: `uri`, `title`, `position`, `duration`,
    /// `paused`, `rate`, `volume`, `queue`, `index`, `at`, `granularity` and `seek_latency`
    /// (seconds); what the player does not know is left out.
    public var message: ValueDictionary {
        var message: ValueDictionary = [
            "paused": .bool(paused), "rate": .double(rate), "queue": .array(queue.map { .string($0) }), "at": .date(at),
        ]
        if let uri { message["uri"] = .string(uri) }
        if let title { message["title"] = .string(title) }
        if let position { message["position"] = .double(position) }
        if let duration { message["duration"] = .double(duration) }
        if let volume { message["volume"] = .double(volume) }
        if let index { message["index"] = .int(Int64(index)) }
        message.setTiming(granularity: positionGranularity, seekLatency: seekLatency)
        return message
    }

    /// The state a `baton.playback` reply carries; nil when it is not one (no `at` date).
    public init?(message: ValueDictionary) {
        guard case .date(let at)? = message["at"] else { return nil }
        var queue: [String] = []
        if case .array(let items)? = message["queue"] {
            for case .string(let uri) in items { queue.append(uri) }
        }
        self.init(
            uri: message.string("uri"), title: message.string("title"), position: message.number("position"),
            duration: message.number("duration"), paused: message.bool("paused") ?? true, rate: message.number("rate") ?? 1,
            volume: message.number("volume"), queue: queue, index: message.number("index").map { Int($0) }, at: at,
            positionGranularity: message.timing("granularity"), seekLatency: message.timing("seek_latency"))
    }
}

extension PlaybackProof {
    /// The proof as `baton.playback` answers `play`: `position`, `at`, unless paused `rate`,
    /// and the player's `granularity` and `seek_latency` when it says them.
    public var message: ValueDictionary {
        var message: ValueDictionary = ["position": .double(position), "at": .date(at)]
        if let rate { message["rate"] = .double(rate) }
        message.setTiming(granularity: positionGranularity, seekLatency: seekLatency)
        return message
    }

    /// The proof a reply to `play` carries; nil when it is not one.
    public init?(message: ValueDictionary) {
        guard case .date(let at)? = message["at"], let position = message.number("position") else { return nil }
        self.init(
            position: position, at: at, rate: message.number("rate"),
            positionGranularity: message.timing("granularity"), seekLatency: message.timing("seek_latency"))
    }
}

extension PlaybackFailure {
    /// The failure as a `baton.playback` reply: `error` and `detail`.
    public var message: ValueDictionary { ["error": .string(code), "detail": .string(description)] }

    /// The failure a reply carries (`error`, `detail`); nil when it carries none.
    public init?(message: ValueDictionary) {
        guard let code = message.string("error") else { return nil }
        self.init(code: code, detail: message.string("detail") ?? code)
    }
}

extension ValueDictionary {
    /// Sets a player's `granularity` and `seek_latency` (seconds), those it knows.
    fileprivate mutating func setTiming(granularity: Double?, seekLatency: Double?) {
        if let granularity { self["granularity"] = .double(granularity) }
        if let seekLatency { self["seek_latency"] = .double(seekLatency) }
    }

    /// A player's timing figure `key`: seconds, not negative and below a minute (anything
    /// else is no figure a player could have: left out).
    fileprivate func timing(_ key: String) -> Double? {
        number(key).flatMap { 0 <= $0 && $0 < 60 ? $0 : nil }
    }
}
