import Logging

/// Limits and reporting for one run of a script: what the runtime core needs. What the
/// script can reach (the network, files) is the modules' business.
public struct RuntimeOptions: Sendable {
    /// The whole run's time limit; stops even a busy loop. Nil means none.
    public var timeout: Duration?
    /// The Lua heap's size limit in bytes; allocations past it fail as "not enough memory".
    public var maxMemory: Int?
    /// The cap `baton run` and `baton batch` give a script unless told otherwise: 1 GiB.
    public static let defaultScriptMemory = 1 << 30
    /// The cap an agent's Lua state (its configuration, launch functions and providers) gets
    /// unless told otherwise: 256 MiB.
    public static let defaultAgentMemory = 256 << 20
    /// Where `baton.log` writes and where the runtime logs.
    public var logger: Logger
    /// Called on the event loop for every uncaught error.
    public var reportFailure: @Sendable (ScriptFailure) -> Void
    /// Where the run records what it saw and did; nil for no trace. The runtime writes
    /// run.start, tasks, calls, errors and run.end; modules add events, logs and retries.
    public var trace: RunTrace?
    /// Options for one run: no limits unless given, logs to `baton.script`, failures dropped
    /// unless `reportFailure` is given.
    public init(
        timeout: Duration? = nil,
        maxMemory: Int? = nil,
        logger: Logger = Logger(label: "baton.script"),
        reportFailure: @escaping @Sendable (ScriptFailure) -> Void = { _ in },
        trace: RunTrace? = nil
    ) {
        self.trace = trace
        self.timeout = timeout
        self.maxMemory = maxMemory
        self.logger = logger
        self.reportFailure = reportFailure
    }
}

/// Where a script's text comes from.
public enum ScriptSource: Sendable {
    /// A file; errors name it as given.
    case file(String)
    /// A string, named `chunkName` in messages (`(command line)`).
    case string(String, chunkName: String)
    /// Standard input, named `stdin` in messages.
    case standardInput
}
