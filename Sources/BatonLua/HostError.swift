import BatonCore

/// What a host function throws to raise a Lua error in the calling script. The C trampoline
/// raises it after every Swift frame has returned.
public enum HostError: Error, Sendable {
    /// Raise `message` with the caller's position prefixed: `script.lua:3: message`.
    case message(String)
    /// Raise the value the host function left on top of the stack, as it is.
    case valueOnTop
    /// Raise an error of a class (`err.class` in Lua; the exit code when nothing catches it),
    /// its message with the caller's position prefixed. A future a host function waits for
    /// may fail with it too.
    case classed(ErrorClass, String)
    /// As ``classed(_:_:)``, for a request that failed for `cause`: the class is the one the
    /// cause maps to (``FailureCause/errorClass``), and `err.cause` names the cause too.
    case caused(FailureCause, String)

    /// Lua's argument error: `bad argument #2 to 'baton.sleep' (number expected, got string)`.
    public static func argument(_ position: Int, _ function: String, _ detail: String) -> HostError {
        .message("bad argument #\(position) to '\(function)' (\(detail))")
    }
}
