import BatonClient
import BatonNet
import Logging

/// Limits and reporting for one run of a script.
public struct RuntimeOptions: Sendable {
    /// The whole run's time limit; stops even a busy loop. Nil means none.
    public var timeout: Duration?
    /// The Lua heap's size limit in bytes; allocations past it fail as "not enough memory".
    public var maxMemory: Int?
    /// Where `baton.log` writes and where the runtime logs.
    public var logger: Logger
    /// Called on the event loop for every uncaught error.
    public var reportFailure: @Sendable (ScriptFailure) -> Void
    /// How `baton.find`, `baton.devices` and `baton.watch` find devices: mDNS (on unless set
    /// to nil), static peers (`baton run --peer`), liveness.
    public var discovery = DeviceDirectory.Options()
    /// How long connecting to a device may take before it counts as unavailable.
    public var connectTimeout: Duration = .seconds(3)
    /// Makes the connections' security on the script's first network call (so scripts that
    /// never touch the network never load the account); an error fails that call. The default
    /// is plaintext, which reaches loopback agents only.
    public var security: @Sendable () throws -> ConnectionSecurity = { .insecure }

    public init(
        timeout: Duration? = nil,
        maxMemory: Int? = nil,
        logger: Logger = Logger(label: "baton.script"),
        reportFailure: @escaping @Sendable (ScriptFailure) -> Void = { _ in }
    ) {
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
