import BatonCore
import CLuaShim
import NIOCore

/// Tasks and time: `baton.spawn` (and the task handle's `wait`, `status`, `cancel`),
/// `baton.sleep`, `baton.after` and `baton.every` (and the timer's `stop`, `active`),
/// `baton.exit`, `baton.now`. The tasks themselves are the scheduler's, in the runtime core;
/// this module owns the timers. A pending timer keeps the run alive until it fires or stops.
public final class TaskModule: LuaModule, @unchecked Sendable {
    /// Pending `baton.after` and `baton.every` timers, by id.
    private var timers: [Int: LuaTimer] = [:]
    private var nextTimerID = 1

    /// A module for one run.
    public init() {}

    /// Adds the task and timer functions and their handles' metatables.
    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        let lua = runtime.state

        runtime.register("sleep", in: m, qualifier: "baton") { call in
            let seconds = try call.seconds(1)
            let runtime = call.runtime
            let s = try runtime.suspendCurrentTask(call)
            if seconds == 0 {
                runtime.resume(s)
            } else {
                runtime.eventLoop.scheduleTask(in: .nanoseconds(Int64(seconds * 1e9))) { runtime.resume(s) }
            }
            return .wait
        }

        runtime.register("spawn", in: m, qualifier: "baton") { call in
            try call.function(1)
            return .values(call.runtime.spawn(call))
        }

        runtime.register("after", in: m, qualifier: "baton") { [self] call in
            let seconds = try call.seconds(1)
            try call.function(2)
            return .values(startTimer(call, seconds: seconds, repeats: false))
        }

        runtime.register("every", in: m, qualifier: "baton") { [self] call in
            let seconds = try call.seconds(1)
            guard seconds > 0 else { throw call.argumentError(1, "interval must be > 0") }
            try call.function(2)
            return .values(startTimer(call, seconds: seconds, repeats: true))
        }

        runtime.register("error", in: m, qualifier: "baton") { call in try Self.raise(call) }
        runtime.register("check", in: m, qualifier: "baton") { call in try Self.check(call) }
        runtime.register("exit", in: m, qualifier: "baton") { call in
            let code: Int32
            switch call.lua.type(at: 1) {
            case .none, .nil: code = 0
            case .boolean: code = call.lua.toBool(at: 1) ? 0 : 1
            default:
                let n = try call.integer(1)
                guard (0...255).contains(n) else { throw call.argumentError(1, "exit code must be 0...255, got \(n)") }
                code = Int32(n)
            }
            let runtime = call.runtime
            runtime.exitCode = code
            if call.lua.isYieldable, runtime.current != nil {
                // Never resumed: the scheduler ends the run as soon as the task yields.
                return .wait
            }
            // Where Lua cannot yield, stop through the hook; no pcall can catch it.
            baton_stop(call.lua.pointer, "exit")
            throw HostError.message("exit")
        }

        runtime.register("now", in: m, qualifier: "baton") { call in
            call.lua.push(Double(baton_monotonic_ns()) / 1e9)
            return .values(1)
        }

        // The task handle's methods.
        luaL_newmetatable(lua.pointer, TaskHandle.metatable)
        lua.newTable()
        runtime.register("wait", in: -1, qualifier: "task") { call in
            try call.runtime.waitForTask(call)
        }
        runtime.register("status", in: -1, qualifier: "task") { call in
            let p = try call.taskHandle(1)
            let status = switch TaskHandle.state(p) {
            case TaskHandle.done: "done"
            case TaskHandle.failed: "failed"
            case TaskHandle.cancelled: "cancelled"
            default: "running"
            }
            call.lua.push(status)
            return .values(1)
        }
        runtime.register("cancel", in: -1, qualifier: "task") { call in
            let p = try call.taskHandle(1)
            let runtime = call.runtime
            guard TaskHandle.state(p) == TaskHandle.running, let task = runtime.tasks[TaskHandle.id(p)] else {
                call.lua.push(false)
                return .values(1)
            }
            if task === runtime.current {
                throw HostError.message("task \(task.id) cannot cancel itself: return from its function instead")
            }
            call.lua.push(runtime.cancel(task))
            return .values(1)
        }
        lua.rawSet(-2, field: "__index")
        runtime.pushFunction(named: "task.__tostring") { call in
            let p = try call.taskHandle(1)
            call.lua.push("task \(TaskHandle.id(p))")
            return .values(1)
        }
        lua.rawSet(-2, field: "__tostring")
        lua.pop()

        // The timer handle's methods.
        luaL_newmetatable(lua.pointer, LuaTimer.metatable)
        lua.newTable()
        runtime.register("stop", in: -1, qualifier: "timer") { [self] call in
            guard let p = call.lua.testUserdata(at: 1, named: LuaTimer.metatable) else {
                throw call.argumentError(1, "timer expected, got \(call.lua.typeName(at: 1))")
            }
            let id = Int(p.load(as: Int64.self))
            call.lua.push(stopTimer(id, in: call.runtime))
            return .values(1)
        }
        runtime.register("active", in: -1, qualifier: "timer") { [self] call in
            guard let p = call.lua.testUserdata(at: 1, named: LuaTimer.metatable) else {
                throw call.argumentError(1, "timer expected, got \(call.lua.typeName(at: 1))")
            }
            call.lua.push(timers[Int(p.load(as: Int64.self))] != nil)
            return .values(1)
        }
        lua.rawSet(-2, field: "__index")
        runtime.pushFunction(named: "timer.__tostring") { call in
            let p = call.lua.toUserdata(at: 1)!
            call.lua.push("timer \(p.load(as: Int64.self))")
            return .values(1)
        }
        lua.rawSet(-2, field: "__tostring")
        lua.pop()
    }

    /// Cancels the pending timers.
    public func runFinished(_ runtime: LuaRuntime) {
        for timer in timers.values { timer.scheduled?.cancel() }
        timers.removeAll()
    }

    private func startTimer(_ call: HostCall, seconds: Double, repeats: Bool) -> Int32 {
        let lua = call.lua
        let runtime = call.runtime
        let id = nextTimerID
        nextTimerID += 1
        lua.pushValue(at: 2)
        let fnRef = lua.ref()
        let p = baton_newuserdata(lua.pointer, 8, 0)!
        p.storeBytes(of: Int64(id), as: Int64.self)
        lua.pushMetatable(named: LuaTimer.metatable)
        lua.setMetatable(-2)
        lua.pushValue(at: -1)
        let handleRef = lua.ref()
        let timer = LuaTimer(
            id: id, interval: .nanoseconds(max(Int64(seconds * 1e9), 0)), repeats: repeats,
            location: call.callerLocation, functionRef: fnRef, handleRef: handleRef)
        timers[id] = timer
        runtime.retainKeepAlive()
        schedule(timer, in: runtime)
        return 1
    }

    private func schedule(_ timer: LuaTimer, in runtime: LuaRuntime) {
        timer.scheduled = runtime.eventLoop.scheduleTask(deadline: timer.nextDeadline) { [self] in
            fire(timer, in: runtime)
        }
    }

    private func fire(_ timer: LuaTimer, in runtime: LuaRuntime) {
        guard !runtime.finished, timers[timer.id] === timer else { return }
        let task = runtime.makeTask(origin: .timer(id: timer.id, at: timer.location))
        let co = task.thread
        co.pushRef(timer.functionRef)
        co.pushRef(timer.handleRef)
        runtime.enqueue(task, nargs: 1)
        if timer.repeats {
            // Fixed rate: the next tick is due one interval after this one was, not after now.
            timer.nextDeadline = timer.nextDeadline + timer.interval
            if timer.nextDeadline < .now() { timer.nextDeadline = .now() + timer.interval }
            schedule(timer, in: runtime)
        } else {
            release(timer, in: runtime)
        }
    }

    /// Stops timer `id`; true if it was still pending.
    private func stopTimer(_ id: Int, in runtime: LuaRuntime) -> Bool {
        guard let timer = timers[id] else { return false }
        timer.scheduled?.cancel()
        release(timer, in: runtime)
        return true
    }

    private func release(_ timer: LuaTimer, in runtime: LuaRuntime) {
        timers[timer.id] = nil
        runtime.state.unref(timer.functionRef)
        runtime.state.unref(timer.handleRef)
        runtime.releaseKeepAlive()
    }
}

extension LuaRuntime {
    /// `baton.spawn(fn, ...)`: a new task, started on the scheduler's next turn.
    fileprivate func spawn(_ call: HostCall) -> Int32 {
        let lua = call.lua
        let nargs = lua.top
        let task = makeTask(origin: .spawned(at: call.callerLocation))
        // Move fn and its arguments onto the new coroutine's stack.
        lua_xmove(lua.pointer, task.thread.pointer, nargs)
        TaskHandle.push(lua, id: task.id)
        lua.pushValue(at: -1)
        task.handleRef = lua.ref()
        enqueue(task, nargs: nargs - 1)
        return 1
    }

    /// `handle:wait()`.
    fileprivate func waitForTask(_ call: HostCall) throws -> HostResult {
        let p = try call.taskHandle(1)
        let lua = call.lua
        if TaskHandle.state(p) != TaskHandle.running {
            let n = TaskHandle.pushOutcome(lua, handle: 1)
            guard lua.toBool(at: -n) else { throw HostError.valueOnTop }
            baton_remove(lua.pointer, -n)
            return .values(n - 1)
        }
        guard let task = tasks[TaskHandle.id(p)] else {
            throw HostError.message("task \(TaskHandle.id(p)) is no longer known")
        }
        guard task !== current else { throw HostError.message("a task cannot wait for itself") }
        let s = try suspendCurrentTask(call, onHost: false)
        task.waiters.append(s.task)
        s.task.waitingOn = task
        return .wait
    }
}

extension HostCall {
    /// The task handle at `position`.
    func taskHandle(_ position: Int32) throws -> UnsafeMutableRawPointer {
        guard let p = lua.testUserdata(at: position, named: TaskHandle.metatable) else {
            throw argumentError(position, "task expected, got \(lua.typeName(at: position))")
        }
        return p
    }
}

extension TaskModule {
    /// `baton.error(class, message)`: raises an error of that class (`not_found`,
    /// `unavailable`, `timeout`, `denied`, `lock_held`, `usage`, `batch`, `script`), which ends
    /// an uncaught run with its exit code.
    fileprivate static func raise(_ call: HostCall) throws -> HostResult {
        let name = try call.string(1)
        guard let errorClass = ErrorClass(rawValue: name) else {
            throw call.argumentError(1, "error class expected (\(ErrorClass.allCases.map(\.rawValue).joined(separator: ", "))), got \"\(name)\"")
        }
        let message = call.lua.type(at: 2) == .none || call.lua.type(at: 2) == .nil ? name : try call.string(2)
        throw HostError.classed(errorClass, message)
    }

    /// `baton.check(status [, detail [, cause]])`: returns `status` when it is `success`
    /// (what `baton.launch` and `conn:send` answer with; `baton.handoff`'s report in place
    /// of the detail gives its detail and cause), else raises an error of the class
    /// its cause maps to, saying `status: detail`. The cause is the one the request returned
    /// after its detail (`timed_out`, `denied`, `unreachable`, ...: ``FailureCause``), else
    /// what the status stands for (`remote_system_unavailable` is unreachable, so
    /// `unavailable`; `denied_by_remote_system` is `denied`, ...). So
    /// `baton.check(baton.launch(tv, uri))` is a launch that ends the run with 69 when the TV
    /// is off, and with 3 when it timed out.
    fileprivate static func check(_ call: HostCall) throws -> HostResult {
        let status = try call.string(1)
        let lua = call.lua
        var detail = lua.type(at: 2) == .string ? lua.toString(at: 2) ?? "" : ""
        var named = lua.type(at: 3) == .string ? lua.toString(at: 3).flatMap(FailureCause.init(rawValue:)) : nil
        if lua.type(at: 2) == .table {
            // `baton.check(baton.handoff(...))`: the report says why.
            lua.rawGet(2, field: "detail")
            detail = lua.type(at: -1) == .string ? lua.toString(at: -1) ?? "" : ""
            lua.pop()
            lua.rawGet(2, field: "cause")
            named = lua.type(at: -1) == .string ? lua.toString(at: -1).flatMap(FailureCause.init(rawValue:)) : nil
            lua.pop()
        }
        guard status != "success" else {
            call.lua.pushValue(at: 1)
            return .values(1)
        }
        let cause = named ?? FailureCause(status: status) ?? .failed
        throw HostError.caused(cause, detail.isEmpty ? status : "\(status): \(detail)")
    }
}
