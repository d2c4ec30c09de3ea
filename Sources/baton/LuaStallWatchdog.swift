import CLuaShim
import Logging
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts the agent again when its Lua is stuck: the loop Lua runs on has not come back for
/// `limit`, because a launch function or provider is blocked in a C function that neither a
/// deadline nor the count hook reaches (a blocking `os.execute`, a read from a pipe nobody
/// writes). A stuck C function cannot be unwound from inside it; as a browser ends a renderer
/// that hangs, the agent ends that state by starting over: it execs itself with the same
/// arguments, on the same pid, so a service manager sees no exit, every descriptor closes
/// first (connections drop; the listening port is free for the new process), and the players
/// it started are attached to again on their sockets.
///
/// The beat is a task on the Lua loop every second; a thread of its own checks it. Pure Lua
/// never gets this far: a task runs at most ``LuaRuntime/stretchLimit`` (10 s) without
/// waiting, so the default limit of 30 s leaves a stuck C function as the only cause.
final class LuaStallWatchdog: @unchecked Sendable {
    private let limit: Duration
    private let logger: Logger
    /// When the Lua loop last ran the beat (monotonic ns).
    private let beat = Atomic<Int64>(0)
    /// Set once the agent shuts down: a shutdown waiting on stuck Lua ends, not starts again.
    private let stoodDown = Atomic<Bool>(false)

    private init(limit: Duration, logger: Logger) {
        self.limit = limit
        self.logger = logger
        beat.store(Self.now(), ordering: .relaxed)
    }

    /// Watches `loop` (the Lua loop) from now on; nil, and nothing watched, for a zero limit.
    static func start(watching loop: any EventLoop, limit: Duration, logger: Logger) -> LuaStallWatchdog? {
        guard limit > .zero else { return nil }
        let watchdog = LuaStallWatchdog(limit: limit, logger: logger)
        loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            watchdog.beat.store(Self.now(), ordering: .relaxed)
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(watchdog).toOpaque()
        let made = pthread_create(&thread, nil, { raw in
            Unmanaged<LuaStallWatchdog>.fromOpaque(raw!).takeRetainedValue().watch()
            return nil
        }, box)
        guard made == 0 else {
            Unmanaged<LuaStallWatchdog>.fromOpaque(box).release()
            logger.warning("cannot watch the agent's Lua for stalls", metadata: ["errno": "\(made)"])
            return nil
        }
        pthread_detach(thread)
        return watchdog
    }

    /// Watches no more: the agent is shutting down.
    func standDown() {
        stoodDown.store(true, ordering: .relaxed)
    }

    private func watch() {
        let limitNs = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
        while true {
            sleep(1)
            if stoodDown.load(ordering: .relaxed) { return }
            let stalled = Self.now() - beat.load(ordering: .relaxed)
            guard stalled >= limitNs else { continue }
            logger.critical("the agent's Lua has not come back for \(stalled / 1_000_000_000) s, stuck in a C function no deadline reaches; starting the agent again", metadata: [
                "limit": "\(limit)"])
            Self.startAgain()
        }
    }

    /// Execs this program with its own arguments, every descriptor but stdin, stdout and
    /// stderr closed on the way. Returns only if the exec failed, after logging it.
    private static func startAgain() -> Never {
        fflush(nil)
        let highest = Int32(clamping: sysconf(Int32(_SC_OPEN_MAX)))
        for fd in 3..<min(highest, 65536) { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let arguments = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        // The exec failed: ending is the next best thing (a service manager starts it again).
        let problem = String(cString: strerror(errno))
        StandardError.write("baton agent: cannot start again (\(problem)); exiting\n")
        _exit(70)
    }

    private static func now() -> Int64 { Int64(baton_monotonic_ns()) }
}
