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
}
