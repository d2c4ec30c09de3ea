/// Why a request to a device (or the lookup of one) did not succeed: the one typed cause
/// behind every status Baton answers with, whatever command or script made the request.
///
/// A failure carries its cause beside its Rome status (the status says what the protocol
/// says; the cause says why, in terms an operator acts on). ``errorClass`` is the one mapping
/// from a cause to a class, and so to an exit code; nothing reads a detail's words to find it.
/// Scripts see the cause's name (`timed_out`, `denied`, ...) as the last value a request
/// returns, and `baton.check` raises the class it maps to.
public enum FailureCause: String, Sendable, CaseIterable {
    /// No answer came by the request's deadline.
    case timedOut = "timed_out"
    /// The device could not be reached: no route, nothing listening at its address (an agent
    /// that is not running), or the connection was lost before the answer.
    case unreachable
    /// A device known by name (enrolled, or seen before) that answers nowhere now: switched
    /// off, or off the network.
    case notAnswering = "not_answering"
    /// The device answered, but cannot do it now: the app is not installed or not on it, no
    /// app takes the URI, the service is missing, busy or closed its channel.
    case unavailable
    /// This side would not talk to the device: it belongs to another account, is revoked, or
    /// is not the device discovery said.
    case denied
    /// The device refused this caller: not authorized for that app (another account's caller),
    /// or a certificate it does not take.
    case refused
    /// What was sent is over a limit (the launch data, the message).
    case tooLarge = "too_large"
    /// No device is named so or has that id (or several are: ambiguous).
    case notFound = "not_found"
    /// The device's service did not take the request: a command or field it does not know.
    case badRequest = "bad_request"
    /// The player is gone, did not answer by its deadline, or loaded it and did not play.
    case playerFailed = "player_failed"
    /// The device cannot open what it was asked to play: a file missing or unreadable there, a
    /// format its player does not take.
    case mediaUnavailable = "media_unavailable"
    /// The source of a handoff plays nothing.
    case nothingPlaying = "nothing_playing"
    /// The work was cancelled before it finished.
    case cancelled
    /// The target of a handoff plays something else, and the handoff's `busy` policy would not
    /// replace it: unavailable for now.
    case busy
    /// The request cannot be right whatever the devices do: a device handed to itself.
    case usage
    /// The app or service failed, and said why only in words (`failure`, `unknown`).
    case failed

    /// The class of an error with this cause: the one mapping from causes to classes (and,
    /// through ``ErrorClass/exitCode``, to exit codes).
    public var errorClass: ErrorClass {
        switch self {
        case .timedOut: .timeout
        case .unreachable, .notAnswering, .unavailable, .busy: .unavailable
        case .usage: .usage
        case .denied, .refused: .denied
        case .notFound: .notFound
        case .tooLarge, .badRequest, .playerFailed, .mediaUnavailable, .nothingPlaying, .cancelled, .failed: .script
        }
    }

    /// The process exit code of a command that ends with this cause.
    public var exitCode: Int32 { errorClass.exitCode }

    /// The cause a launch status stands for when nothing more is known; nil for `success`.
    public init?(_ status: LaunchStatus) {
        switch status {
        case .success: return nil
        case .appUnavailable, .protocolUnavailable: self = .unavailable
        case .remoteSystemUnavailable: self = .unreachable
        case .valueSetTooLarge: self = .tooLarge
        case .deniedByLocalSystem: self = .denied
        case .deniedByRemoteSystem: self = .refused
        case .unknown: self = .failed
        }
    }

    /// The cause an open status stands for when nothing more is known; nil for `success`.
    public init?(_ status: OpenStatus) {
        switch status {
        case .success: return nil
        case .appNotInstalled, .appUnavailable, .appServiceUnavailable, .remoteSystemNotSupportedByApp: self = .unavailable
        case .remoteSystemUnavailable: self = .unreachable
        case .notAuthorized: self = .refused
        case .unknown: self = .failed
        }
    }

    /// The cause a response status stands for when nothing more is known; nil for `success`.
    public init?(_ status: ResponseStatus) {
        switch status {
        case .success: return nil
        case .resourceLimitsExceeded, .appServiceConnectionClosed: self = .unavailable
        case .remoteSystemUnavailable: self = .unreachable
        case .messageSizeTooLarge: self = .tooLarge
        case .failure, .unknown: self = .failed
        }
    }

    /// The cause a handoff status stands for when nothing more is known; nil for `success`.
    public init?(_ status: HandoffStatus) {
        switch status {
        case .success: return nil
        case .nothingPlaying: self = .nothingPlaying
        case .sourceUnavailable, .targetUnavailable: self = .unavailable
        case .mediaUnavailable: self = .mediaUnavailable
        case .targetFailed, .sourceStopFailed: self = .playerFailed
        case .timeout: self = .timedOut
        case .cancelled: self = .cancelled
        case .targetBusy: self = .busy
        case .sameDevice: self = .usage
        }
    }

    /// The cause a playback failure (a `baton.playback` reply's `error`) stands for.
    public init(_ failure: PlaybackFailure) {
        switch failure {
        case .cannotOpen: self = .mediaUnavailable
        case .didNotPlay, .player: self = .playerFailed
        case .badRequest: self = .badRequest
        }
    }

    /// The cause a status named `status` stands for, for callers that hold only its name (a
    /// script's `baton.check(status)`): the launch, open, response and handoff statuses, and
    /// `not_found`/`ambiguous`/`timeout`. Nil for `success` and for names no status has.
    public init?(status: String) {
        if status == "success" { return nil }
        if let launch = LaunchStatus(rawValue: status) { self.init(launch) }
        else if let open = OpenStatus(rawValue: status) { self.init(open) }
        else if let response = ResponseStatus(rawValue: status) { self.init(response) }
        else if let handoff = HandoffStatus(rawValue: status) { self.init(handoff) }
        else {
            switch status {
            case "not_found", "ambiguous": self = .notFound
            default: return nil
            }
        }
    }
}

/// A Rome status, which stands for a cause when nothing more is known of a failure.
public protocol CausedStatus: RawRepresentable, Sendable where RawValue == String {
    /// The cause this status stands for; nil for `success`.
    var impliedCause: FailureCause? { get }
}

extension LaunchStatus: CausedStatus {
    public var impliedCause: FailureCause? { FailureCause(self) }
}

extension OpenStatus: CausedStatus {
    public var impliedCause: FailureCause? { FailureCause(self) }
}

extension ResponseStatus: CausedStatus {
    public var impliedCause: FailureCause? { FailureCause(self) }
}

extension HandoffStatus: CausedStatus {
    public var impliedCause: FailureCause? { FailureCause(self) }
}
