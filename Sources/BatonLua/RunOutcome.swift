import BatonCore

/// How a run of a script ended; each case maps to one exit code of `baton run`.
public enum RunOutcome: Sendable, Equatable {
    /// The main chunk returned and nothing was left to fire, with no error anywhere: exit 0.
    case completed
    /// An uncaught error in the main chunk, a task, a timer or a handler: exit 1.
    case failed
    /// As ``failed``, when the first uncaught error had a class (`baton.find` with
    /// `required`, `baton.check`, `baton.error`): that class's exit code (68 not found, 69
    /// unavailable, ...).
    case failedWith(ErrorClass)
    /// The script could not be loaded (missing file, syntax error): exit 2, with the message.
    case invalidScript(String)
    /// `--timeout` ran out: exit 3.
    case timedOut(Duration)
    /// The script called `baton.exit(code)`.
    case exited(Int32)
    /// SIGINT or SIGTERM ended the run (``LuaRuntime/interrupt(signal:)``): exit 128 + the
    /// signal's number, as a shell reports a process the signal ended.
    case interrupted(signal: Int32)

    /// The process exit code for this outcome.
    public var exitCode: Int32 {
        switch self {
        case .completed: 0
        case .failed: 1
        case .failedWith(let errorClass): errorClass.exitCode
        case .invalidScript: 2
        case .timedOut: 3
        case .exited(let code): code
        case .interrupted(let signal): 128 + signal
        }
    }

    /// How traces and reports name the outcome: completed, failed, invalid_script,
    /// timed_out, exited, interrupted.
    public var name: String {
        switch self {
        case .completed: "completed"
        case .failed, .failedWith: "failed"
        case .invalidScript: "invalid_script"
        case .timedOut: "timed_out"
        case .exited: "exited"
        case .interrupted: "interrupted"
        }
    }
}

/// An uncaught error in a script, as the user should see it.
public struct ScriptFailure: Error, Sendable, Equatable {
    /// `script.lua:3: message`.
    public var message: String
    /// Lua's `stack traceback:` text, one frame a line.
    public var traceback: String
    /// Where the failing code ran, nil for the main chunk: `task 2 (spawned at script.lua:5)`,
    /// `timer 1 (set at script.lua:9)`.
    public var context: String?
    /// Whether the code did not fail but was cancelled (``LuaRuntime/cancelTask(_:)``): the
    /// message then says so (`task 3 was cancelled`), and there is no traceback.
    public var isCancellation: Bool
    /// Whether the code was stopped at its task's deadline (a provider or launch function that
    /// ran past its request's): the message then says it timed out.
    public var isTimeout: Bool
    /// The error's class when it had one (`baton.check`, `baton.find` with `required`, ...):
    /// what JSON log lines say as `class`.
    public var errorClass: ErrorClass?

    /// A failure as the user should see it; `isCancellation` for a task that was cancelled,
    /// `isTimeout` for one stopped at its deadline.
    public init(message: String, traceback: String, context: String?, isCancellation: Bool = false, isTimeout: Bool = false) {
        self.message = message
        self.traceback = traceback
        self.context = context
        self.isCancellation = isCancellation
        self.isTimeout = isTimeout
    }
}
