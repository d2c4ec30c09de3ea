import CLuaShim
import NIOCore

extension LuaRuntime {
    // MARK: tasks

    /// Makes a task around a new coroutine; the caller puts the function (and arguments) on
    /// its stack and enqueues it.
    func makeTask(origin: LuaTask.Origin) -> LuaTask {
        let thread: LuaState
        let ref: Int32
        if case .host = origin, let idle = idleThreads.popLast() {
            (thread, ref) = idle
        } else {
            thread = LuaState(lua_newthread(state.pointer)!)
            // The script's coroutine functions treat it as a main thread (baton_coroutine.c);
            // an idle coroutine taken above was marked when it was made.
            baton_mark_task(state.pointer)
            ref = state.ref()
        }
        let task = LuaTask(id: nextTaskID, origin: origin, thread: thread, threadRef: ref)
        nextTaskID += 1
        tasks[task.id] = task
        traceSpawn(task)
        return task
    }

    /// How many finished coroutines are kept for reuse: about as many provider calls as are
    /// usually in flight at once.
    static let idleThreadLimit = 64

    /// How long a task with a deadline may run Lua without waiting, whatever its deadline:
    /// every other task of the state waits meanwhile.
    public static let stretchLimit = TimeAmount.seconds(10)

    /// Queues `task` to be resumed with the `nargs` values on top of its stack.
    func enqueue(_ task: LuaTask, nargs: Int32) {
        ready.append((task, nargs))
        scheduleDrain()
    }

    func scheduleDrain() {
        guard !drainScheduled, !finished else { return }
        drainScheduled = true
        eventLoop.execute { self.drain() }
    }

    /// Runs ready tasks; after a batch, lets the loop serve I/O and timers before going on.
    private func drain() {
        drainScheduled = false
        var budget = 4096
        while !finished, let next = ready.popFirst() {
            resume(next.task, nargs: next.nargs)
            budget -= 1
            if budget == 0 {
                if !ready.isEmpty { scheduleDrain() }
                return
            }
        }
        endIfIdle()
    }

    /// DESIGN rule 5: the run ends when nothing is left that can fire.
    private func endIfIdle() {
        guard !finished, ready.isEmpty, pendingWaits == 0, keepAliveCount == 0 else { return }
        if tasks.isEmpty {
            finish(failed ? failedOutcome : .completed)
        } else {
            // Tasks remain, all blocked in :wait() on one another, and nothing can wake them.
            let ids = tasks.keys.sorted().map { $0 == 1 ? "main" : "task \($0)" }
            options.reportFailure(ScriptFailure(
                message: "deadlock: \(ids.joined(separator: ", ")) wait for each other and nothing else can wake them",
                traceback: "", context: nil))
            finish(.failed)
        }
    }

    private func resume(_ task: LuaTask, nargs: Int32) {
        let co = task.thread
        current = task
        var nres: Int32 = 0
        if task.deadline != 0 {
            // The caller chose the deadline (a stranger may choose 49 days): one stretch of Lua
            // without a wait, which holds up every other task, ends sooner.
            let stretchEnd = baton_monotonic_ns() + Self.stretchLimit.nanoseconds
            limits.pointee.task_deadline_ns = min(task.deadline, stretchEnd)
            // The hook that enforces it: on this coroutine only (it slows Lua down), when the
            // state has none.
            if limits.pointee.deadline_ns == 0 { baton_rearm_hook(co.pointer) }
        }
        let status = baton_resume(co.pointer, state.pointer, nargs, &nres)
        limits.pointee.task_deadline_ns = 0
        // The task ran past its deadline: the hook or a long C function stopped it.
        let pastDeadline = limits.pointee.task_stopping != 0
        if pastDeadline {
            limits.pointee.task_stopping = 0
            baton_rearm_hook(co.pointer)
        }
        var traceback = ""
        if pastDeadline, status == LUA_YIELD {
            // The hook yielded it where it stood: it ends here, its to-be-closed variables closed.
            current = nil
            traceback = tracebackOf(co)
            _ = baton_close_thread(co.pointer)
            co.setTop(0)
            co.push(BATON_TASK_TIMEOUT_MESSAGE)
            fail(task, traceback: traceback, pastDeadline: true)
            return
        }
        if status != LUA_OK, status != LUA_YIELD {
            // The task failed. Its traceback first, while the stack is still there.
            traceback = tracebackOf(co)
            // The stock lua runs its main chunk in a pcall, which closes the pending
            // to-be-closed variables on the way out; lua_resume leaves them open, so close
            // them here: their handlers run, and an error one raises replaces the task's.
            // Not when the run is being stopped (the count hook would stop them at once).
            if limits.pointee.stopping == 0 { baton_close_failed(co.pointer) }
        }
        current = nil
        if let code = exitCode {
            finish(.exited(code))
            return
        }
        if limits.pointee.timed_out != 0, let timeout = options.timeout {
            finish(.timedOut(timeout))
            return
        }
        switch status {
        case LUA_YIELD:
            let waiting = nres == 1 && co.type(at: -1) == .lightUserdata && co.toUserdata(at: -1) == baton_wait_sentinel()
            co.pop(nres)
            if waiting {
                if let early = task.earlyWake {
                    task.earlyWake = nil
                    enqueue(task, nargs: early(co))
                }
            } else {
                // Not a wait: the script's coroutine.yield() cannot yield a task's coroutine
                // (baton_coroutine.c), so only the count hook does, and it ends the run above.
                // Should anything else, go on after the others.
                enqueue(task, nargs: 0)
            }
        case LUA_OK:
            complete(task, results: nres)
        default:
            fail(task, traceback: traceback, pastDeadline: pastDeadline)
        }
    }

    private func complete(_ task: LuaTask, results n: Int32) {
        let co = task.thread
        task.completion?(.success(TaskResults(lua: co, count: n)))
        if let handle = task.handleRef, co.checkStack(4) {
            // Keep the results in the handle, for :wait() calls now and later.
            co.newTable(arrayCount: n, recordCount: 1)
            for i in 0..<n {
                co.pushValue(at: -1 - n + i)
                co.rawSet(-2, index: Int(i) + 1)
            }
            co.push(Int(n))
            co.rawSet(-2, field: "n")
            storeOutcome(handle: handle, on: co, state: TaskHandle.done)
        }
        co.pop(n)
        traceTaskEnd(task, status: "ok")
        retire(task, threadReusable: true)
    }

    /// How a run that failed ends: with the first classed error's exit code, else 1.
    var failedOutcome: RunOutcome { failureClass.map(RunOutcome.failedWith) ?? .failed }

    /// `pastDeadline`: the task was stopped at its deadline (``startTask(function:name:deadline:arguments:completion:)``).
    private func fail(_ task: LuaTask, traceback: String, pastDeadline: Bool = false) {
        let co = task.thread
        failed = true
        if failureClass == nil { failureClass = errorClass(at: -1, on: co) }
        let failure = report(task: task, traceback: traceback, pastDeadline: pastDeadline)
        task.completion?(.failure(failure))
        if let handle = task.handleRef {
            storeOutcome(handle: handle, on: co, state: TaskHandle.failed)
        }
        co.setTop(0)
        traceTaskEnd(task, status: "error")
        retire(task)
        if case .main = task.origin {
            finish(failedOutcome)
        }
    }

    /// Moves the value on top of `co` (results table or error) into the task's handle.
    private func storeOutcome(handle: Int32, on co: LuaState, state taskState: Int64) {
        co.pushRef(handle)
        co.pushValue(at: -2)
        lua_setiuservalue(co.pointer, -2, 1)
        co.toUserdata(at: -1)!.storeBytes(of: taskState, toByteOffset: 8, as: Int64.self)
        co.pop(2)
    }

    /// `threadReusable`: the task's coroutine finished normally (its stack is empty), so a
    /// host-started task's coroutine can serve the next one.
    private func retire(_ task: LuaTask, threadReusable: Bool = false) {
        tasks[task.id] = nil
        if threadReusable, case .host = task.origin, task.thread.top == 0, idleThreads.count < Self.idleThreadLimit {
            idleThreads.append((task.thread, task.threadRef))
        } else {
            state.unref(task.threadRef)
        }
        if let handle = task.handleRef {
            for waiter in task.waiters { wakeWaiter(waiter, handle: handle) }
            state.unref(handle)
            task.handleRef = nil
        }
        task.waiters = []
    }

    /// Resumes a task blocked in `:wait()` with the outcome stored in the handle.
    private func wakeWaiter(_ waiter: LuaTask, handle: Int32) {
        waiter.waitingOn = nil
        guard waiter.waitToken != 0 else { return }
        let s = Suspension(task: waiter, token: waiter.waitToken)
        resume(s) { lua in
            lua.pushRef(handle)
            let n = TaskHandle.pushOutcome(lua, handle: -1)
            baton_remove(lua.pointer, -1 - n)
            return n
        }
    }

    private func tracebackOf(_ co: LuaState) -> String {
        luaL_traceback(state.pointer, co.pointer, nil, 0)
        defer { state.pop() }
        return state.toString(at: -1) ?? ""
    }

    /// Reports the failed task's error, on top of its stack.
    @discardableResult
    private func report(task: LuaTask, traceback: String, pastDeadline: Bool = false) -> ScriptFailure {
        // A dead coroutine cannot run a __tostring: a classed error's message is read as it is.
        // One stopped at its deadline says so, whatever a pcall made of the stop.
        let message = pastDeadline
            ? BATON_TASK_TIMEOUT_MESSAGE
            : classedMessage(at: -1, on: task.thread) ?? task.thread.describe(at: -1)
        var failure = ScriptFailure(message: message, traceback: traceback, context: task.context)
        failure.isTimeout = pastDeadline
        failure.errorClass = pastDeadline ? .timeout : errorClass(at: -1, on: task.thread)
        options.trace?.error(task: task, message: message, errorClass: errorClass(at: -1, on: task.thread)?.rawValue, traceback: traceback)
        options.reportFailure(failure)
        return failure
    }

    // MARK: tasks the host starts

    /// Runs the Lua function referenced by `function` (see ``LuaRuntime/reference(at:on:)``) as
    /// a new task, with the arguments `arguments` pushes onto the task's stack (returning how
    /// many). `completion` runs on the loop with the results, or with the failure (which is
    /// also reported, traceback included, unless it is a cancellation). Returns the task, for
    /// ``cancelTask(_:)``; nil when the run has ended (`completion` is then told so at once).
    /// A task given a `deadline` that is still running at it stops there, even inside a
    /// pattern match or a `pcall`, and fails with a ``ScriptFailure/isTimeout`` failure; so
    /// does one that runs Lua for ``stretchLimit`` without waiting.
    /// Call on the loop.
    @discardableResult
    public func startTask(
        function: LuaReference, name: String, deadline: NIODeadline? = nil,
        arguments: (LuaState) -> Int32,
        completion: @escaping (Result<TaskResults, ScriptFailure>) -> Void
    ) -> LuaTaskID? {
        startTask(name: name, deadline: deadline, push: { lua in
            lua.pushRef(function.ref)
            return arguments(lua)
        }, completion: completion)
    }

    /// Runs a new task whose function and arguments `push` puts on the task's stack, returning
    /// the number of arguments, or nil when there is nothing to run (the task is dropped,
    /// `completion` is not called, and the result is nil). Returns the task, for
    /// ``cancelTask(_:)``. A `deadline` stops it as
    /// ``startTask(function:name:deadline:arguments:completion:)`` says. Call on the loop.
    @discardableResult
    public func startTask(
        name: String, deadline: NIODeadline? = nil, push: (LuaState) -> Int32?,
        completion: ((Result<TaskResults, ScriptFailure>) -> Void)? = nil
    ) -> LuaTaskID? {
        eventLoop.preconditionInEventLoop()
        guard !finished else {
            completion?(.failure(ScriptFailure(message: "the Lua runtime has stopped", traceback: "", context: name)))
            return nil
        }
        let task = makeTask(origin: .host(name))
        task.completion = completion
        if let deadline {
            // The hook reads CLOCK_MONOTONIC; NIO's clock may count from elsewhere.
            let left = max(deadline - .now(), .nanoseconds(1))
            task.deadline = baton_monotonic_ns() + left.nanoseconds
        }
        guard let nargs = push(task.thread) else {
            tasks[task.id] = nil
            state.unref(task.threadRef)
            return nil
        }
        enqueue(task, nargs: nargs)
        return LuaTaskID(value: task.id)
    }

    // MARK: cancelling

    /// The task whose Lua code is running now (a host function's caller), if any: the owner
    /// to record for what a module hands out.
    public var currentTaskID: LuaTaskID? { current.map { LuaTaskID(value: $0.id) } }

    /// Cancels task `id`, as `h:cancel()` does: its pending to-be-closed variables close (their
    /// `__close` cannot wait), a wait it was in is abandoned (the host's work completing later
    /// resumes nothing), tasks waiting for it raise `task 3 was cancelled`, its handle's status
    /// becomes `cancelled`, and the modules close what it owned (watchers, channels). A task
    /// the host started has its completion told a failure whose ``ScriptFailure/isCancellation``
    /// is set; a cancellation is not an error of the run and is not reported. Returns false,
    /// doing nothing, for a task that has finished, the main chunk, and the task running now
    /// (which must return instead). Call on the loop.
    @discardableResult
    public func cancelTask(_ id: LuaTaskID) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard let task = tasks[id.value], task !== current else { return false }
        if case .main = task.origin { return false }
        return cancel(task)
    }

    /// Cancels `task` (not the current one); false when it cannot be (it is being cancelled
    /// already, or its coroutine is active: it resumed the one that runs now).
    func cancel(_ task: LuaTask) -> Bool {
        guard !finished, !task.cancelling, tasks[task.id] === task else { return false }
        task.cancelling = true
        // Its __close handlers run now, outside the scheduler: none of them is "the current
        // task", so a baton call that would wait raises instead.
        let running = current
        current = nil
        // Where it stood, for the report of a __close that raises.
        let traceback = tracebackOf(task.thread)
        let closed = baton_close_thread(task.thread.pointer)
        current = running
        guard closed != -1 else {
            task.cancelling = false
            return false
        }
        if ready.contains(where: { $0.task === task }) {
            ready = CircularBuffer(ready.filter { $0.task !== task })
        }
        if task.waitToken != 0, task.waitIsOnHost { pendingWaits -= 1 }
        task.waitToken = 0
        task.earlyWake = nil
        if let awaited = task.waitingOn {
            awaited.waiters.removeAll { $0 === task }
            task.waitingOn = nil
        }
        if closed != LUA_OK {
            // A __close raised: an error of the run, reported as one of this task's.
            failed = true
            report(task: task, traceback: traceback)
        }
        let co = task.thread
        co.setTop(0)
        let message = "\(task.name) was cancelled"
        task.completion?(.failure(ScriptFailure(message: message, traceback: "", context: task.context, isCancellation: true)))
        if let handle = task.handleRef {
            co.push(message)
            storeOutcome(handle: handle, on: co, state: TaskHandle.cancelled)
        }
        traceTaskEnd(task, status: "cancelled")
        retire(task)
        let id = LuaTaskID(value: task.id)
        for module in modules { module.taskCancelled(id, in: self) }
        scheduleDrain()
        return true
    }

    // MARK: waiting on the host

    /// Suspends the task that called the running host function. Return `.wait` right after,
    /// and resume the task later, once, with ``resume(_:push:)``.
    public func suspendCurrentTask(_ call: HostCall) throws -> Suspension {
        try suspendCurrentTask(call, onHost: true)
    }

    /// `onHost` false: the task waits for another task, which alone does not keep the run
    /// alive (so that tasks waiting on each other are found as a deadlock).
    func suspendCurrentTask(_ call: HostCall, onHost: Bool) throws -> Suspension {
        guard call.lua.isYieldable, let task = current else {
            throw HostError.message("\(call.name) cannot wait here: it was called where Lua cannot yield "
                + "(inside a metamethod, an iterator or a C function such as table.sort)")
        }
        let token = nextToken
        nextToken += 1
        task.waitToken = token
        task.waitIsOnHost = onHost
        if onHost { pendingWaits += 1 }
        return Suspension(task: task, token: token)
    }

    /// Resumes a suspended task on the loop: `push` puts the resume values on the task's stack
    /// and returns how many: `true, results...` to return results, `false, err` to raise err
    /// as it is, or `1, message` to raise message with the call's position. Stale or repeated
    /// resumptions are ignored.
    public func resume(_ suspension: Suspension, push: @escaping (LuaState) -> Int32) {
        eventLoop.preconditionInEventLoop()
        let task = suspension.task
        guard !finished, task.waitToken == suspension.token else { return }
        task.waitToken = 0
        if task.waitIsOnHost { pendingWaits -= 1 }
        if task === current {
            // Finished before the task even yielded: apply once it has.
            task.earlyWake = push
        } else {
            guard task.thread.checkStack(8) else { return }
            enqueue(task, nargs: push(task.thread))
        }
    }

    /// Resumes with `true` and no results.
    public func resume(_ suspension: Suspension) {
        resume(suspension) { lua in
            lua.push(true)
            return 1
        }
    }

    /// Resumes by raising `message` at the call site (`script.lua:3: message`).
    public func resume(_ suspension: Suspension, raising message: String) {
        resume(suspension) { lua in
            lua.push(1)
            lua.push(message)
            return 2
        }
    }

    /// Abandons the current task's wait (the wait could not reach the scheduler).
    func abandonWait(of task: LuaTask) {
        guard task.waitToken != 0 || task.earlyWake != nil else { return }
        if task.waitToken != 0 && task.waitIsOnHost { pendingWaits -= 1 }
        task.waitToken = 0
        task.earlyWake = nil
        scheduleDrain()
    }

    // MARK: convenience for asynchronous host work

    /// Waits for `future` in the calling task: `deliver` pushes the value's results on the
    /// loop; a failed future raises its error at the call site.
    public func wait<T: Sendable>(
        _ call: HostCall, for future: EventLoopFuture<T>,
        deliver: @escaping (T, LuaState) -> Int32
    ) throws -> HostResult {
        let s = try suspendCurrentTask(call)
        let deliver = NIOLoopBound(deliver, eventLoop: eventLoop)
        let traced = NIOLoopBound(traceCallStart(call), eventLoop: eventLoop)
        future.hop(to: eventLoop).whenComplete { [self] result in
            switch result {
            case .success(let value):
                resume(s) { [self] lua in
                    lua.push(true)
                    let n = deliver.value(value, lua)
                    if let traced = traced.value { traceCallEnd(traced, results: n, on: lua) }
                    return 1 + n
                }
            case .failure(HostError.classed(let errorClass, let message)):
                if let traced = traced.value { traceCallEnd(traced, errorClass: errorClass, message: message) }
                resume(s, raising: errorClass, message)
            case .failure(HostError.caused(let cause, let message)):
                if let traced = traced.value { traceCallEnd(traced, errorClass: cause.errorClass, message: message) }
                resume(s, raising: cause.errorClass, message, cause: cause)
            case .failure(let error):
                if let traced = traced.value { traceCallEnd(traced, errorClass: nil, message: String(describing: error)) }
                resume(s, raising: String(describing: error))
            }
        }
        return .wait
    }

    /// Waits for Swift async `work` in the calling task, as ``wait(_:for:deliver:)``.
    public func wait<T: Sendable>(
        _ call: HostCall, for work: @escaping @Sendable () async throws -> T,
        deliver: @escaping (T, LuaState) -> Int32
    ) throws -> HostResult {
        let promise = eventLoop.makePromise(of: T.self)
        promise.completeWithTask(work)
        return try wait(call, for: promise.futureResult, deliver: deliver)
    }
}
