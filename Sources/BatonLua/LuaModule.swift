/// One part of the `baton` table, chosen by the embedder: `baton run` gives a script
/// ``BatonModules/standard(network:)``, the agent adds its configuration functions, a test or
/// the benchmark may give fewer.
///
/// A module owns its state (a directory and its watchers, open channels, a timer table); the
/// runtime core keeps only the Lua state, the scheduler, host-function dispatch and the limits.
/// Modules that share something (the client and discovery modules share one client and one
/// directory) are handed the same object when they are made, never reach it through the runtime.
/// A module object serves one run: make a new one for every run. Everything a module does
/// happens on the runtime's event loop.
public protocol LuaModule: AnyObject, Sendable {
    /// Adds the module's functions to the `baton` table, which is at `table` on the stack of
    /// `runtime.state` (or, for a module of globals, sets globals). Runs once, on the loop,
    /// before the script starts, in the order the embedder listed the modules. An error stops
    /// the run before it starts.
    func install(in runtime: LuaRuntime, table: Int32) throws

    /// The run has ended (the script finished, failed, exited or timed out): stop what the
    /// module started that could outlive it (sockets, watchers, scheduled work). No Lua code can
    /// run any more. Does nothing unless the module implements it.
    func runFinished(_ runtime: LuaRuntime)

    /// `task` was cancelled: close what it owned (a watcher it started, a channel it opened),
    /// as if the script had closed each. Does nothing unless the module implements it.
    func taskCancelled(_ task: LuaTaskID, in runtime: LuaRuntime)
}

extension LuaModule {
    /// Does nothing.
    public func runFinished(_ runtime: LuaRuntime) {}
    /// Does nothing.
    public func taskCancelled(_ task: LuaTaskID, in runtime: LuaRuntime) {}
}

/// Which task a host function runs in, or which one the host started: the owner of what a
/// module hands out (a watcher, a channel), and what ``LuaRuntime/cancelTask(_:)`` takes.
public struct LuaTaskID: Hashable, Sendable, CustomStringConvertible {
    let value: Int

    init(value: Int) {
        self.value = value
    }

    /// The task's number, as ``init(number:)`` takes it back (to keep an id where only an
    /// integer fits).
    public var number: Int { value }

    /// The id whose ``number`` is `number`.
    public init(number: Int) {
        value = number
    }

    /// `task 3`.
    public var description: String { "task \(value)" }
}
