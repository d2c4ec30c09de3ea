import Foundation
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
    /// The write end of the pipe ``watch(_:)`` reads; -1 until it is called.
    private static let wakeFD = Atomic<Int32>(-1)

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
                // write(2) is async-signal-safe: the watcher's thread does the rest.
                let fd = Interruption.wakeFD.load(ordering: .relaxed)
                if fd >= 0 {
                    var byte: UInt8 = 1
                    _ = write(fd, &byte, 1)
                }
            }
            sigaddset(&unblock, signo)
        }
        // A parent may have started us with them blocked (a test runner, a supervisor that
        // sigwaits); the threads made from now on inherit this thread's mask.
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// Calls `handler` on a thread of its own with each signal counted (the signal, and how
    /// many so far), from now on. Call once, with ``catchSignals()``, before other threads.
    public static func watch(_ handler: @escaping @Sendable (_ signal: Int32, _ count: Int) -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let readEnd = fds[0]
        wakeFD.store(fds[1], ordering: .relaxed)
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n == 1 {
                    let (signal, count) = received
                    handler(signal, count)
                } else if n < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        thread.start()
    }

    /// Ends the process as `signal` would have, had it not been caught (after writing out C's
    /// buffers): its parent sees it killed by the signal (a shell says 128 + the number).
    public static func die(by signal: Int32) -> Never {
        fflush(nil)
        Glibc.signal(signal, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signal)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        kill(getpid(), signal)
        // Not reached, unless the signal is blocked in a way we cannot undo.
        exit(128 + signal)
    }

    /// The last signal received (0 for none) and how many were received in all.
    public static var received: (signal: Int32, count: Int) {
        (lastSignal.load(ordering: .relaxed), signalCount.load(ordering: .relaxed))
    }
}
