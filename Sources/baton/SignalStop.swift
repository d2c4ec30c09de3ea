import BatonLua
import Foundation
import Synchronization

/// SIGINT and SIGTERM for a traced `baton run`: the first asks the run to end (on its loop,
/// the trace finished with run.end), and if the loop has not ended it within ``grace`` (Lua
/// that never yields, a C function that blocks), or at a second signal, the trace is finished
/// from the signal's thread; then the process dies by the signal, as it would have untraced.
final class SignalStop: Sendable {
    /// The run, once it exists.
    let runtime = Mutex<LuaRuntime?>(nil)
    /// Names the finished trace (--trace-dir) by the exit code.
    let settle: @Sendable (Int32) -> Void
    /// How long the loop has to end the run after the first signal.
    static let grace: Duration = .seconds(2)

    init(settle: @escaping @Sendable (Int32) -> Void) {
        self.settle = settle
    }

    /// Catches the signals from now on. Call before any thread is made.
    func catchSignals() {
        Interruption.catchSignals()
        Interruption.watch { [self] signal, count in
            guard let runtime = runtime.withLock({ $0 }) else {
                // No run yet: nothing to finish.
                Interruption.die(by: signal)
            }
            if count == 1 {
                runtime.interrupt(signal: signal)
                // Waits out the grace, unless the run ends or another signal comes first.
                let until = ContinuousClock.now + Self.grace
                while ContinuousClock.now < until, !runtime.isFinished, Interruption.received.count == 1 {
                    Thread.sleep(forTimeInterval: 0.02)
                }
                if runtime.isFinished { return }
            }
            // Still not ended (or signalled again): finished from here.
            let outcome = RunOutcome.interrupted(signal: signal)
            if runtime.finishFromOutside(outcome) {
                settle(outcome.exitCode)
                Interruption.die(by: signal)
            }
        }
    }
}
