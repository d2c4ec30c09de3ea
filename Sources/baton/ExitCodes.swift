import BatonCore

/// The exit codes of the commands that talk to devices. A failure's cause decides it, through
/// the one mapping ``FailureCause/errorClass`` (see ``ErrorClass``): 0 success, 1 the service,
/// app or player failed or did not take the request, 3 timeout, 68 not found, 69 unavailable
/// or unreachable, 77 denied. The table the README and `--help` carry.
enum ExitCodes {
    /// What `--help` of each such command says.
    static let help = """
        Exit codes, the same for every command and a script's err.class: 0 success; 1 the \
        service, app or player failed or did not take the request (failure, unknown, \
        bad_request, player_failed, value_set_too_large, ...); 2 usage; 3 timeout; 68 no \
        such device (by name or id); 69 the device, its app or its service unavailable or \
        unreachable (remote_system_unavailable, app_unavailable, app_not_installed, ...); 77 \
        denied (a device of another account, revoked, not_authorized, denied_by_*). With \
        --json, a failure is one object too: {"status", "cause", "class", "exit_code", \
        "detail", ...}.
        """

    /// The exit code of a command that ended with `cause`; 0 for none (success).
    static func code(_ cause: FailureCause?) -> Int32 {
        cause?.exitCode ?? 0
    }
}
