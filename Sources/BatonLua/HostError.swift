/// What a host function throws to raise a Lua error in the calling script. The C trampoline
/// raises it after every Swift frame has returned.
public enum HostError: Error, Sendable {
    /// Raise `message` with the caller's position prefixed: `script.lua:3: message`.
    case message(String)
    /// Raise the value the host function left on top of the stack, as it is.
    case valueOnTop

    /// Lua's argument error: `bad argument #2 to 'baton.sleep' (number expected, got string)`.
    public static func argument(_ position: Int, _ function: String, _ detail: String) -> HostError {
        .message("bad argument #\(position) to '\(function)' (\(detail))")
    }
}
