import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM counted rather than obeyed, for a command that stops gracefully (a
/// batch: start nothing new, let what runs finish, then write its journal and report). Until
/// ``catchSignals()`` is called, the signals keep their default action and nothing is counted.
public enum Interruption {
    private static let lastSignal = Atomic<Int32>(0)
    private static let signalCount = Atomic<Int>(0)

    /// From now on SIGINT and SIGTERM are counted here instead of ending the process. Call it
    /// before any thread is made.
    public static func catchSignals() {
        // Touch both before a handler can run: a lazy initialisation is not signal-safe.
        _ = received
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for signo in [SIGINT, SIGTERM] {
            signal(signo) { signo in
                Interruption.lastSignal.store(signo, ordering: .relaxed)
                Interruption.signalCount.add(1, ordering: .relaxed)
            }
            sigaddset(&unblock, signo)
        }
        // A parent may have started us with them blocked (a test runner, a supervisor that
        // sigwaits); the threads made from now on inherit this thread's mask.
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// The last signal received (0 for none) and how many were received in all.
    public static var received: (signal: Int32, count: Int) {
        (lastSignal.load(ordering: .relaxed), signalCount.load(ordering: .relaxed))
    }
}
