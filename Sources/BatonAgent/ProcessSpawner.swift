import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts handler commands: argv lists, never a shell. Children are reaped on the agent's loop.
final class ProcessSpawner: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private var children: Set<pid_t> = []
    private var reaping: RepeatedTask?

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    /// Starts `argv[0]` (looked up in PATH) with `argv`; standard input is /dev/null, output
    /// goes where the agent's goes. Returns why it could not start, if it could not.
    func spawn(_ argv: [String]) -> String? {
        eventLoop.preconditionInEventLoop()
        switch Self.start(argv, quiet: false) {
        case .failure(let why):
            return why.text
        case .success(let pid):
            children.insert(pid)
            if reaping == nil {
                reaping = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(250)) { [self] _ in
                    reap()
                }
            }
            return nil
        }
    }

    /// Why a process could not start.
    struct CannotStart: Error {
        let text: String
    }

    /// Starts `argv[0]` (looked up in PATH) with `argv` and standard input on /dev/null; its
    /// output goes where the agent's goes, or (`quiet`) nowhere; every signal unblocked and at
    /// its default. The caller reaps it.
    static func start(_ argv: [String], quiet: Bool) -> Result<pid_t, CannotStart> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // The agent blocks SIGTERM and SIGINT to wait for them; a child must not inherit that,
        // nor signals the agent ignores, or it could not be stopped with them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cargs = argv.map { strdup($0) } + [nil]
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, &attributes, cargs, environ)
        guard rc == 0 else { return .failure(CannotStart(text: "cannot start \(argv[0]): \(String(cString: strerror(rc)))")) }
        return .success(pid)
    }

    private func reap() {
        for pid in children {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) != 0 { children.remove(pid) }
        }
        if children.isEmpty {
            reaping?.cancel()
            reaping = nil
        }
    }
}
