/// What kind of failure an error is: the exit code a run or a command ends with when nothing
/// handles it, and (for batches) whether trying again can help. Scripts see it as `err.class`.
public enum ErrorClass: String, Sendable, CaseIterable {
    /// An error in the script itself: exit 1.
    case script
    /// Wrong usage, or a script that does not load: exit 2.
    case usage
    /// A deadline passed: exit 3.
    case timeout
    /// A batch whose failures went past what it tolerates, or that halted: exit 4.
    case batch
    /// A device, or what was asked of it, was not found: exit 68 (EX_NOHOST).
    case notFound = "not_found"
    /// A device or its app is unavailable or unreachable: exit 69 (EX_UNAVAILABLE).
    case unavailable
    /// A lock another run holds: exit 75 (EX_TEMPFAIL).
    case lockHeld = "lock_held"
    /// Denied: another account, revoked, not authorized: exit 77 (EX_NOPERM).
    case denied

    /// The process exit code for an uncaught error of this class.
    public var exitCode: Int32 {
        switch self {
        case .script: 1
        case .usage: 2
        case .timeout: 3
        case .batch: 4
        case .notFound: 68
        case .unavailable: 69
        case .lockHeld: 75
        case .denied: 77
        }
    }

    /// The class of a status Baton answers with (launch, open, response, handoff statuses, and
    /// `not_found`/`ambiguous` from finding a device); nil for `success`. `detail` tells an
    /// `unknown` that timed out from other `unknown`s.
    public init?(status: String, detail: String = "") {
        switch status {
        case "success":
            return nil
        case "remote_system_unavailable", "app_unavailable", "app_not_installed", "app_service_unavailable",
             "protocol_unavailable", "remote_system_not_supported_by_app", "app_service_connection_closed",
             "resource_limits_exceeded", "source_unavailable", "target_unavailable", "media_unavailable":
            self = .unavailable
        case "denied_by_local_system", "denied_by_remote_system", "not_authorized":
            self = .denied
        case "not_found", "ambiguous":
            self = .notFound
        case "timeout":
            self = .timeout
        case "unknown" where detail.hasPrefix("timed out"):
            self = .timeout
        default:
            self = .script
        }
    }
}
