import BatonClient
import BatonCore
import CLuaShim
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import Synchronization

/// One script's Lua state and the scheduler that runs its tasks.
///
/// Everything about a runtime happens on its `eventLoop`: the state is touched from that one
/// thread only (DESIGN rule 2). The main chunk and every spawned function or timer callback runs
/// as a coroutine; a host function that waits yields its coroutine, and the host resumes it on
/// the loop when the work is done. Create one with
/// ``run(_:arguments:commandLine:options:modules:on:configure:)``, which installs the modules the
/// embedder chose (``LuaModule``).
public final class LuaRuntime: @unchecked Sendable {
    /// The loop that owns the state.
    public let eventLoop: any EventLoop
    /// The main thread of the state (never runs script code itself).
    public let state: LuaState
    let options: RuntimeOptions
    var logger: Logger { options.logger }
    let limits: UnsafeMutablePointer<baton_runtime>

    var boxes: [HostFunctionBox] = []
    /// The modules the embedder chose, in the order they were installed.
    public internal(set) var modules: [any LuaModule] = []
    var tasks: [Int: LuaTask] = [:]
    var nextTaskID = 1
    var nextToken: UInt64 = 1
    var ready = CircularBuffer<(task: LuaTask, nargs: Int32)>(initialCapacity: 16)
    var drainScheduled = false
    var pendingWaits = 0
    var keepAliveCount = 0
    var current: LuaTask?
    /// Coroutines of host-started tasks that finished normally, kept for the next such task
    /// (a provider call) instead of a new coroutine each time; with their registry references.
    var idleThreads: [(thread: LuaState, ref: Int32)] = []
    var failed = false
    /// The class of the first uncaught error that had one: the run's exit code.
    var failureClass: ErrorClass?
    var exitCode: Int32?
    var finished = false {
        didSet { if finished { finishedSeen.store(true, ordering: .releasing) } }
    }
    /// `finished` for other threads (an agent's serving loop asks).
    private let finishedSeen = Atomic<Bool>(false)
    var deadline: Scheduled<Void>?
    /// Writes the trace's gathered lines out every ``RunTrace/flushInterval``.
    var traceFlush: RepeatedTask?
    /// Taken by whoever writes the run's end into the trace: the loop, or a watchdog that
    /// ends the process while the loop is stuck (``startWatchdog(grace:expire:)``).
    let endClaimed = Atomic<Bool>(false)
    let promise: EventLoopPromise<RunOutcome>
    /// Told when the main chunk has returned or failed, before the run may go on serving
    /// timers and tasks (an agent starts listening then). Set it in `configure`.
    public var mainChunkCompletion: ((Result<Void, ScriptFailure>) -> Void)?
    /// Metatables' addresses, to recognise Baton's own userdata quickly.
    var metatables = Metatables()

    struct Metatables {
        var array: UnsafeRawPointer?
        var date: UnsafeRawPointer?
        var uuid: UnsafeRawPointer?
        var bytes: UnsafeRawPointer?
        var error: UnsafeRawPointer?
        /// Registry references of the same metatables, to push them without a name lookup.
        var arrayRef: Int32 = 0
        var dateRef: Int32 = 0
        var uuidRef: Int32 = 0
        var bytesRef: Int32 = 0
        var errorRef: Int32 = 0
    }

    init(options: RuntimeOptions, eventLoop: any EventLoop) throws {
        HostDispatch.installed
        self.options = options
        self.eventLoop = eventLoop
        self.promise = eventLoop.makePromise()
        limits = .allocate(capacity: 1)
        limits.initialize(to: baton_runtime())
        if let timeout = options.timeout {
            limits.pointee.deadline_ns = baton_monotonic_ns() + TimeAmount(timeout).nanoseconds
            let message = "timeout after \(DurationText.format(timeout))"
            withUnsafeMutableBytes(of: &limits.pointee.stop_message) { buf in
                let bytes = Array(message.utf8.prefix(buf.count - 1)) + [0]
                buf.copyBytes(from: bytes)
            }
        }
        guard let L = baton_newstate(limits) else {
            limits.deallocate()
            throw HostError.message("cannot create a Lua state")
        }
        state = LuaState(L)
        luaL_openlibs(L)
        // Pattern matching that stops at a deadline: Lua's own never lets the hook run.
        baton_open_patterns(L)
        installValueMetatables()
        installErrorMetatable()
    }

    deinit {
        limits.deallocate()
    }

    /// Stands for the runtime in objects that may outlive it and must then do nothing: they
    /// keep it weakly. A weak reference to the runtime itself would put every retain and
    /// release of the runtime, a few per request served, on the runtime's slow path.
    package final class Handle {
        /// Valid while the handle is: only the runtime holds it strongly.
        package unowned(unsafe) let runtime: LuaRuntime
        init(_ runtime: LuaRuntime) { self.runtime = runtime }
    }

    /// This runtime's ``Handle``.
    package private(set) lazy var handle = Handle(self)

    /// Loads and runs a script to its end on `loop`.
    ///
    /// `arguments` become the script's `...` and `arg[1...]`; `arg[0]` is the script's name;
    /// `commandLine`, the words before the script, become `arg[-n...-1]` (as the stock `lua`
    /// sets them). `modules` make up the `baton` table, installed in that order (by default
    /// ``BatonModules/standard(network:)`` with plaintext connections); pass new module objects
    /// for every run. `configure` runs on the loop after the modules are installed and before
    /// the script starts, to register more host functions. The future succeeds with the
    /// outcome; uncaught errors go to `options.reportFailure`.
    public static func run(
        _ source: ScriptSource,
        arguments: [String] = [],
        commandLine: [String] = [],
        options: RuntimeOptions = RuntimeOptions(),
        modules: [any LuaModule] = BatonModules.standard(),
        on loop: any EventLoop,
        configure: @escaping @Sendable (LuaRuntime) throws -> Void = { _ in }
    ) -> EventLoopFuture<RunOutcome> {
        loop.flatSubmit {
            let runtime: LuaRuntime
            do {
                runtime = try LuaRuntime(options: options, eventLoop: loop)
            } catch {
                return loop.makeFailedFuture(error)
            }
            do {
                try runtime.install(modules)
                try configure(runtime)
            } catch {
                runtime.finished = true
                runtime.promise.fail(error)
                runtime.close()
                return runtime.promise.futureResult
            }
            return runtime.start(source, arguments: arguments, commandLine: commandLine)
        }
    }

    // MARK: starting

    func start(_ source: ScriptSource, arguments: [String], commandLine: [String]) -> EventLoopFuture<RunOutcome> {
        // A run keeps itself until it ends: while it only waits for an open channel or a
        // watcher, nothing else may hold it.
        running = self
        let lua = state
        let status: Int32
        let name: String
        switch source {
        case .file(let path):
            name = path
            status = baton_loadfile(lua.pointer, path)
        case .string(let code, let chunkName):
            name = chunkName
            var code = code
            status = code.withUTF8 { buf in
                buf.withMemoryRebound(to: CChar.self) { baton_loadbuffer(lua.pointer, $0.baseAddress, $0.count, "=" + chunkName) }
            }
        case .standardInput:
            name = "-"
            status = baton_loadfile(lua.pointer, nil)
        }
        guard status == LUA_OK else {
            let message = lua.toString(at: -1) ?? "cannot load \(name)"
            lua.pop()
            finish(.invalidScript(message))
            return promise.futureResult
        }
        setArgTable(scriptName: name, arguments: arguments, commandLine: commandLine)
        if let trace = options.trace {
            trace.record("run.start") {
                $0.field("trace_id", trace.context.traceID)
                $0.field("script", name)
                $0.field("pid", Int(getpid()))
                if let parent = trace.context.parentSpanID { $0.field("parent_span", parent) }
                $0.field("span", trace.context.spanID)
            }
            traceFlush = eventLoop.scheduleRepeatedTask(initialDelay: RunTrace.flushInterval, delay: RunTrace.flushInterval) { _ in
                trace.flushIfPending()
            }
        }
        // The cap is the script's: Baton's own setup is not counted against it.
        if let max = options.maxMemory { limits.pointee.limit = max }

        // The main chunk runs as a coroutine, like every task.
        let task = makeTask(origin: .main)
        if let done = mainChunkCompletion {
            task.completion = { result in done(result.map { _ in () }) }
        }
        let chunk = lua.top
        lua.pushValue(at: chunk)
        lua_xmove(lua.pointer, task.thread.pointer, 1)
        lua.pop()
        for a in arguments { task.thread.push(a) }
        enqueue(task, nargs: Int32(arguments.count))

        if let timeout = options.timeout {
            deadline = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
                guard !finished else { return }
                limits.pointee.timed_out = 1
                finish(.timedOut(timeout))
            }
        }
        return promise.futureResult
    }

    private func setArgTable(scriptName: String, arguments: [String], commandLine: [String]) {
        let lua = state
        lua.newTable(arrayCount: Int32(arguments.count), recordCount: Int32(1 + commandLine.count))
        for (i, word) in commandLine.reversed().enumerated() {
            lua.push(word)
            lua.rawSet(-2, index: -(i + 1))
        }
        lua.push(scriptName)
        lua.rawSet(-2, index: 0)
        for (i, a) in arguments.enumerated() {
            lua.push(a)
            lua.rawSet(-2, index: i + 1)
        }
        lua_setglobal(lua.pointer, "arg")
    }

    // MARK: registering host functions

    /// Pushes a Lua function that runs `body`.
    public func pushFunction(named name: String, _ body: @escaping HostBody) {
        let box = HostFunctionBox(name: name, body: body, runtime: self)
        boxes.append(box)
        baton_push_host_function(state.pointer, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Sets `table[field]` (the table at `index` of the main state) to a host function; the
    /// function's name in messages is `qualifier.field`.
    public func register(_ field: String, in index: Int32, qualifier: String, _ body: @escaping HostBody) {
        let t = state.absolute(index)
        pushFunction(named: qualifier.isEmpty ? field : "\(qualifier).\(field)", body)
        state.rawSet(t, field: field)
    }

    /// Sets the global `name` to a host function.
    public func registerGlobal(_ name: String, _ body: @escaping HostBody) {
        pushFunction(named: name, body)
        lua_setglobal(state.pointer, name)
    }

    /// Keeps the value at `index` of `lua` alive and returns a handle to it, for
    /// ``startTask(function:name:arguments:completion:)`` or ``push(_:on:)-(LuaReference,_)``.
    public func reference(at index: Int32, on lua: LuaState) -> LuaReference {
        lua.pushValue(at: index)
        return LuaReference(ref: lua.ref())
    }

    /// Pushes the referenced value.
    public func push(_ reference: LuaReference, on lua: LuaState) {
        lua.pushRef(reference.ref)
    }

    /// Lets the referenced value be collected. Does nothing once the state has closed (at the
    /// end of the run), so that host objects outliving the run may release what they hold.
    public func release(_ reference: LuaReference) {
        guard !closed else { return }
        state.unref(reference.ref)
    }

    /// The module of type `type` this run was given, if any.
    public func module<Module: LuaModule>(_ type: Module.Type) -> Module? {
        for module in modules { if let found = module as? Module { return found } }
        return nil
    }

    /// Whether the run has ended; nothing more runs once it has. Safe from any thread.
    public var isFinished: Bool { finishedSeen.load(ordering: .acquiring) }

    /// Keeps the run alive (an open channel, a running watcher) until ``releaseKeepAlive()``.
    public func retainKeepAlive() { keepAliveCount += 1 }

    /// Balances ``retainKeepAlive()``; the run may end once nothing else is pending.
    public func releaseKeepAlive() {
        keepAliveCount -= 1
        scheduleDrain()
    }

    // MARK: ending

    func finish(_ outcome: RunOutcome) {
        guard !finished else { return }
        finished = true
        limits.pointee.stopping = 1
        deadline?.cancel()
        traceFlush?.cancel()
        ready.removeAll()
        for module in modules { module.runFinished(self) }
        // Claimed even without a trace: a watchdog that finds it claimed ends nothing.
        let claimed = !endClaimed.exchange(true, ordering: .acquiringAndReleasing)
        if let trace = options.trace, claimed {
            // Tasks still there when the run ends (baton.exit, a timeout) stop with it.
            for id in tasks.keys.sorted() { if let task = tasks[id] { trace.taskEnded(task, status: "stopped") } }
            trace.finish(exitCode: outcome.exitCode, outcome: outcome.name)
        }
        promise.succeed(outcome)
        // Close once the current call stack has unwound.
        eventLoop.execute {
            self.close()
            self.running = nil
        }
    }

    /// The run itself, from its start to its end.
    private var running: LuaRuntime?

    /// Whether the Lua state is closed: nothing may touch it any more.
    private(set) var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        tasks.removeAll()
        lua_close(state.pointer)
    }
}

/// A Lua value the host keeps alive (a registry reference). Use it on its runtime's loop only.
public struct LuaReference: Sendable, Hashable {
    let ref: Int32
}
