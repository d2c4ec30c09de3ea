import BatonClient
import BatonCore

/// The exit codes of the commands that talk to devices, by class (see ``ErrorClass``): 0
/// success, 1 a failure of the remote script or of the request itself, 3 timeout, 68 not
/// found, 69 unavailable or unreachable, 77 denied. The table the README and `--help` carry.
enum ExitCodes {
    /// What `--help` of each such command says.
    static let help = """
        Exit codes: 0 success; 1 the service or app failed (failure, unknown, \
        value_set_too_large, ...); 2 usage; 3 timeout; 68 no such device (by name or id); 69 \
        the device, its app or its service unavailable or unreachable \
        (remote_system_unavailable, app_unavailable, app_not_installed, ...); 77 denied \
        (another account, revoked, not_authorized).
        """

    /// The exit code for a status and its detail: a `send` whose channel did not open says
    /// why in the detail (`open: app_not_installed: ...`), which decides.
    static func code(status: String, detail: String = "") -> Int32 {
        if detail.hasPrefix("open: "), let opened = detail.dropFirst("open: ".count).split(separator: ":").first {
            return ErrorClass(status: String(opened), detail: detail)?.exitCode ?? 1
        }
        return ErrorClass(status: status, detail: detail)?.exitCode ?? 0
    }

    /// The exit code for a failed client call (describe): unreachable or timed out.
    static func code(_ error: any Error) -> Int32 {
        switch error as? BatonClientError {
        case .timedOut?: ErrorClass.timeout.exitCode
        default: ErrorClass.unavailable.exitCode
        }
    }
}
