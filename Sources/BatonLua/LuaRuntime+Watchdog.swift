import CLuaShim
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

extension LuaRuntime {
    /// For a process that exists to run this one script (`baton run`): when the run has not
    /// ended `grace` after its timeout, because its thread is stuck in a C function that
    /// neither the count hook nor a deadline check reaches (a blocking `os.execute`, a read),
    /// a thread of its own writes the trace's end (`run.end`, timed out) and calls `expire`,
    /// which must end the process. Does nothing for a run without a timeout. Call once, on
    /// the loop, before the script starts.
    public func startWatchdog(grace: Duration, expire: @escaping @Sendable (RunOutcome) -> Void) {
        guard let timeout = options.timeout else { return }
        let due = limits.pointee.deadline_ns + TimeAmount(grace).nanoseconds
        let watchdog = Watchdog(runtime: self, due: due, timeout: timeout, expire: expire)
        var thread = pthread_t()
        let box = Unmanaged.passRetained(watchdog).toOpaque()
        let made = pthread_create(&thread, nil, { raw in
            let watchdog = Unmanaged<Watchdog>.fromOpaque(raw!).takeRetainedValue()
            watchdog.run()
            return nil
        }, box)
        if made == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Watchdog>.fromOpaque(box).release()
            logger.warning("cannot start the run's watchdog", metadata: ["errno": "\(made)"])
        }
    }
}

/// Sleeps until the run's deadline plus a grace, then ends the run unless it ended.
private final class Watchdog: @unchecked Sendable {
    /// Read from the watchdog's thread only once the loop's thread is known stuck (the run
    /// did not claim its end); the trace is not being written then.
    let runtime: LuaRuntime
    let due: Int64
    let timeout: Duration
    let expire: @Sendable (RunOutcome) -> Void

    init(runtime: LuaRuntime, due: Int64, timeout: Duration, expire: @escaping @Sendable (RunOutcome) -> Void) {
        self.runtime = runtime
        self.due = due
        self.timeout = timeout
        self.expire = expire
    }

    func run() {
        var at = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nil) == EINTR {}
        // The loop claims the end when it finishes the run: then there is nothing to do.
        guard !runtime.endClaimed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let outcome = RunOutcome.timedOut(timeout)
        runtime.options.trace?.finish(exitCode: outcome.exitCode, outcome: outcome.name)
        expire(outcome)
    }
}
