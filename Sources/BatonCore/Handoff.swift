#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a handoff went. `success` alone means the target plays (or holds, paused) from where
/// the source was and the source was let go as asked.
public enum HandoffStatus: String, Sendable, CaseIterable {
    case success
    /// The source plays nothing: nothing was touched.
    case nothingPlaying = "nothing_playing"
    /// The source could not be reached, has no player app, or its player did not answer.
    case sourceUnavailable = "source_unavailable"
    /// The target could not be reached, has no such app, or its player did not answer.
    case targetUnavailable = "target_unavailable"
    /// The target cannot open what the source plays; the source was not touched.
    case mediaUnavailable = "media_unavailable"
    /// The target loaded it but did not play as asked, even after a corrective seek; the
    /// source plays on.
    case targetFailed = "target_failed"
    /// The target plays, but the source did not pause or stop: both play now.
    case sourceStopFailed = "source_stop_failed"
    /// A phase did not end by the handoff's deadline; the source plays on.
    case timeout
    /// The handoff was cancelled; the source plays on.
    case cancelled
    /// The source and the target are one device: nothing was touched (a usage error).
    case sameDevice = "same_device"
    /// The target plays something and the handoff would silence it (a paused source, by
    /// default; see ``HandoffOptions/busy``): nothing was touched.
    case targetBusy = "target_busy"
}

/// What to hand off and how.
public struct HandoffOptions: Sendable, Equatable {
    /// What becomes of the source once the target plays.
    public enum SourcePolicy: String, Sendable, CaseIterable { case pause, stop, keep }
    /// Whether the target takes the source's volume (`copy`) or keeps its own.
    public enum VolumePolicy: String, Sendable, CaseIterable { case keep, copy }
    /// What to do with a target that plays something already: `replace` it, or `refuse` the
    /// handoff (`target_busy`, nothing touched).
    public enum BusyPolicy: String, Sendable, CaseIterable { case replace, refuse }

    /// The player app on both devices; nil: the first app of each that answers `baton.playback`.
    public var app: String?
    public var source: SourcePolicy = .pause
    public var volume: VolumePolicy = .keep
    /// A target that plays already; nil: refused when the source is paused (a paused source
    /// would silence it for nothing audible), replaced when the source plays (the music
    /// follows the listener).
    public var busy: BusyPolicy?
    /// The whole handoff's deadline; every phase gets what is left of it.
    public var timeout: Duration = .seconds(15)
    /// A handoff with a key already used within ``keyWindow`` is not done again: the first
    /// one's report is the answer.
    public var key: String?
    public var keyWindow: Duration = .seconds(600)
    /// How far (seconds) the target may be from where the source is and be left there;
    /// further, corrective seeks (at most ``maxSeeks``, each aimed by where the last one
    /// landed) put it right. A paused target is put within a millisecond or two.
    public var precision: Double = 0.005
    /// How many corrective seeks the target may be given.
    public var maxSeeks = 3
    /// How far (seconds) the target may still be after the corrective seek; further, the target
    /// failed (it ignores where it is told to play).
    public var tolerance: Double = 0.25

    public init() {}
}

/// What a handoff did, as `baton.handoff` returns it and `baton handoff --json` prints it.
public struct HandoffReport: Sendable, Equatable {
    public var status: HandoffStatus
    /// For people: why, when not `success`.
    public var detail = ""
    /// The Rome status underneath, when a request to a device ended in one
    /// (`remote_system_unavailable`, `app_not_installed`, ...).
    public var deviceStatus: String?
    /// Why, typed, when not `success` (`denied` for a device of another account, `timed_out`,
    /// ...): what decides the class and the exit code. Nil: what ``status`` stands for.
    public var cause: FailureCause?
    /// What was handed off.
    public var uri: String?
    /// Where the source was when it was let go, and where the target was at that instant
    /// (seconds), as the players said: lines through several readings of each player, lined
    /// up at its steps (see ``PositionLine``), after every seek.
    public var positionAtSource: Double?
    public var positionAtTarget: Double?
    /// The target's position minus the source's at one instant, in milliseconds, measured the
    /// same way while both played (or held, paused), after the last corrective seek: what the
    /// listener hears skipped (positive) or repeated (negative).
    public var positionErrorMs: Double?
    /// How long both played (positive) or neither did (negative) at the switch, from the two
    /// players' own readings; nil when the source kept playing or both were paused.
    public var overlapMs: Double?
    /// From the call to the target confirmed and the source let go.
    public var latencyMs: Double = 0
    /// Each phase's time, in order: find, open, read, start, confirm, switch; after a failure,
    /// up to the phase it cut short.
    public var phases: [(name: String, ms: Double)] = []
    /// How far the target started from where the source was, in milliseconds (target minus
    /// source), before any corrective seek.
    public var startErrorMs: Double?
    /// Whether the target needed a corrective seek, and how many it was given.
    public var corrected = false
    public var seeks = 0
    /// Whether a failure undid what the handoff had started on the target.
    public var rolledBack = false
    /// Whether the source was paused (the target was then started paused).
    public var paused = false
    /// The URL the source served the media at, when the target could not open the file
    /// itself (it lives only on the source).
    public var servedURL: String?
    /// The key, and whether this report is the one a first handoff with it made.
    public var key: String?
    public var repeated = false

    public init(status: HandoffStatus, detail: String = "") {
        self.status = status
        self.detail = detail
    }

    /// Why the handoff failed: ``cause``, else what the status stands for; nil for `success`.
    public var failureCause: FailureCause? { status == .success ? nil : cause ?? status.impliedCause }

    public static func == (a: HandoffReport, b: HandoffReport) -> Bool { a.message == b.message }

    /// The report as a message (and JSON): snake-case fields, absent when unknown; `phases`
    /// as `{name = ms}`.
    public var message: ValueDictionary {
        var message: ValueDictionary = [
            "status": .string(status.rawValue), "latency_ms": .double(latencyMs), "corrected": .bool(corrected),
            "rolled_back": .bool(rolledBack), "paused": .bool(paused), "repeated": .bool(repeated), "seeks": .int(Int64(seeks)),
            "phases": .dictionary(ValueDictionary(phases.map { ($0.name, Value.double($0.ms)) })),
        ]
        if !detail.isEmpty { message["detail"] = .string(detail) }
        if let deviceStatus { message["device_status"] = .string(deviceStatus) }
        if let cause = failureCause {
            message["cause"] = .string(cause.rawValue)
            message["class"] = .string(cause.errorClass.rawValue)
        }
        if let uri { message["uri"] = .string(uri) }
        if let positionAtSource { message["position_at_source"] = .double(positionAtSource) }
        if let positionAtTarget { message["position_at_target"] = .double(positionAtTarget) }
        if let positionErrorMs { message["position_error_ms"] = .double(positionErrorMs) }
        if let overlapMs { message["overlap_ms"] = .double(overlapMs) }
        if let startErrorMs { message["start_error_ms"] = .double(startErrorMs) }
        if let servedURL { message["served_url"] = .string(servedURL) }
        if let key { message["key"] = .string(key) }
        return message
    }

    /// The report `message` holds (as written by ``message``); nil when it holds none.
    public init?(message: ValueDictionary) {
        guard let text = message.string("status"), let status = HandoffStatus(rawValue: text) else { return nil }
        self.init(status: status, detail: message.string("detail") ?? "")
        deviceStatus = message.string("device_status")
        cause = message.string("cause").flatMap(FailureCause.init(rawValue:))
        uri = message.string("uri")
        positionAtSource = message.number("position_at_source")
        positionAtTarget = message.number("position_at_target")
        positionErrorMs = message.number("position_error_ms")
        overlapMs = message.number("overlap_ms")
        startErrorMs = message.number("start_error_ms")
        latencyMs = message.number("latency_ms") ?? 0
        corrected = message.bool("corrected") ?? false
        seeks = message.number("seeks").map { Int($0) } ?? 0
        rolledBack = message.bool("rolled_back") ?? false
        paused = message.bool("paused") ?? false
        repeated = message.bool("repeated") ?? false
        key = message.string("key")
        servedURL = message.string("served_url")
        if case .dictionary(let phases)? = message["phases"] {
            self.phases = phases.compactMap { name, value in phases.number(name).map { (name, $0) } }
        }
    }
}
