import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Why a test could not start a program.
struct SpawnFailure: Error, CustomStringConvertible {
    let description: String
}

/// Starts `argv` (found on PATH) for a test: stdin from /dev/null, stdout and stderr appended
/// to `output`, `environment` added to this process's (an entry replaces one of the same name),
/// in process group `group` when given (0: a new one it leads). The child closes every
/// descriptor from 3 up: all suites share one process, and a player, bus or Kodi that outlives
/// a test must not hold another test's pipes open (a CLI test then waits for an output that
/// never closes). Its signals are unblocked and at their defaults: the test runner's threads
/// block some, and a child inheriting that (mpv, dbus-daemon) ignores SIGTERM.
func spawnChild(_ argv: [String], output: String, environment: [String] = [], group: pid_t? = nil) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    // glibc's closefrom action (2.34), which Swift does not import.
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
    if let group {
        flags |= POSIX_SPAWN_SETPGROUP
        posix_spawnattr_setpgroup(&attributes, group)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
    let names = Set(environment.map { $0.prefix { $0 != "=" } })
    var inherited: [String] = []
    var index = 0
    while let entry = environ[index] {
        let text = String(cString: entry)
        if !names.contains(text.prefix { $0 != "=" }) { inherited.append(text) }
        index += 1
    }
    let cargs = argv.map { strdup($0) } + [nil]
    let cenv = (inherited + environment).map { strdup($0) } + [nil]
    defer {
        for p in cargs { free(p) }
        for p in cenv { free(p) }
    }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, argv[0], &actions, &attributes, cargs, cenv)
    guard rc == 0 else {
        throw SpawnFailure(description: "cannot start \(argv[0]): \(String(cString: strerror(rc))) (is it installed? scripts/test installs it)")
    }
    return pid
}
