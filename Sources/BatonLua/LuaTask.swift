/// One coroutine the scheduler runs: the main chunk, a spawned function, a timer's callback.
/// Confined to the runtime's event loop.
final class LuaTask: @unchecked Sendable {
    enum Origin {
        case main
        case spawned(at: String)
        case timer(id: Int, at: String)
        /// Started by the host (a service provider, a launch function), named for reports.
        case host(String)
    }

    let id: Int
    let origin: Origin
    let thread: LuaState
    /// Registry reference that keeps the coroutine alive while the task runs.
    var threadRef: Int32
    /// Registry reference of the Lua handle (`baton.spawn`'s result), or nil.
    var handleRef: Int32?
    /// Non-zero while the task waits for the host; a resumption must carry the same token.
    var waitToken: UInt64 = 0
    /// Whether the current wait is on the host (a timer, I/O), which keeps the run alive,
    /// rather than on another task.
    var waitIsOnHost = true
    /// A resumption that arrived while the task was still running, applied once it yields.
    var earlyWake: ((LuaState) -> Int32)?
    /// Tasks blocked in `:wait()` on this one.
    var waiters: [LuaTask] = []
    /// The task this one is blocked in `:wait()` on.
    var waitingOn: LuaTask?
    /// Set while the task's to-be-closed variables close for a cancellation.
    var cancelling = false
    /// For a task the host started: told the results (on the task's stack) or the failure.
    var completion: ((Result<TaskResults, ScriptFailure>) -> Void)?
    /// When the task must stop (CLOCK_MONOTONIC ns, as the count hook reads it); 0: never.
    var deadline: Int64 = 0
    /// What a traced run's records say of the task (its parent, its batch item).
    var traceLabel: RunTrace.TaskLabel?

    init(id: Int, origin: Origin, thread: LuaState, threadRef: Int32) {
        self.id = id
        self.origin = origin
        self.thread = thread
        self.threadRef = threadRef
    }

    /// How messages name the task: `task 3`, `timer 1`, the host's name for it.
    var name: String {
        switch origin {
        case .main: "the main chunk"
        case .spawned: "task \(id)"
        case .timer(let timer, _): "timer \(timer)"
        case .host(let name): name
        }
    }

    /// How reports name the task; nil for the main chunk.
    var context: String? {
        switch origin {
        case .main: nil
        case .spawned(let at): "task \(id) (spawned at \(at))"
        case .timer(let timer, let at): "timer \(timer) (set at \(at))"
        case .host(let name): name
        }
    }
}

/// A waiting task's ticket: the host resumes the task with it, exactly once.
public struct Suspension: @unchecked Sendable {
    let task: LuaTask
    let token: UInt64
}

/// The results of a finished task, readable during the completion callback only.
public struct TaskResults {
    /// The task's stack; the results are its top `count` values.
    public let lua: LuaState
    public let count: Int32

    /// The stack index of result `i` (1-based).
    public func index(_ i: Int32) -> Int32 { lua.top - count + i }
}
