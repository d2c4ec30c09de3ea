import BatonCore

/// Ending a run from outside, for SIGINT and SIGTERM: the run stops as at a timeout, its trace
/// finished with `run.end` (the outcome interrupted, exit 128 + the signal).
extension LuaRuntime {
    /// Ends the run with ``RunOutcome/interrupted(signal:)`` as soon as its loop is free (Lua
    /// code running is not cut short). Safe from any thread.
    public func interrupt(signal: Int32) {
        eventLoop.execute { [self] in finish(.interrupted(signal: signal)) }
    }

    /// For a loop that did not end the run in time after ``interrupt(signal:)`` (stuck in Lua
    /// without a deadline, or in a C function): writes the trace's end from this thread, as
    /// the watchdog does, unless the loop has claimed the run's end already. Returns whether it
    /// wrote it; the caller must then end the process at once.
    public func finishFromOutside(_ outcome: RunOutcome) -> Bool {
        guard !endClaimed.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        options.trace?.finish(exitCode: outcome.exitCode, outcome: outcome.name)
        return true
    }
}
