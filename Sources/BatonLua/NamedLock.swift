import BatonCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A lock that runs of Baton share by name, across processes: a kernel lock (`flock`) on the
/// file `NAME.lock` in ``folder``, so a run killed with -9 leaves nothing stale (the kernel lets
/// go with the process). The file also says who holds it, for people (`baton lock status`);
/// the kernel lock alone decides. Two holders in one process exclude each other too.
public final class NamedLock: @unchecked Sendable {
    /// Who holds a lock, as its file says.
    public struct Holder: Sendable, Equatable {
        public var pid: Int32
        public var runID: String
        public var started: Date
        public var command: String

        public init(pid: Int32 = getpid(), runID: String, started: Date = Date(), command: String) {
            self.pid = pid
            self.runID = runID
            self.started = started
            self.command = command
        }

        var json: String {
            JSON.object([
                .init("pid", .int(Int64(pid))), .init("run", .string(runID)), .init("started", .string(ISO8601.format(started))),
                .init("command", .string(command)),
            ]).serialized()
        }

        init?(json text: String) {
            guard let json = try? JSON.parse(text), case .dictionary(let d)? = try? Value(json: json),
                  let pid = d.number("pid"), let run = d.string("run"), let started = d.string("started").flatMap(ISO8601.parse)
            else { return nil }
            self.init(pid: Int32(pid), runID: run, started: started, command: d.string("command") ?? "")
        }

        /// `pid 4242, run 1f0c…, since 2026-11-24T03:00:00.000Z: baton run job.lua`.
        public var description: String {
            "pid \(pid), run \(runID), since \(ISO8601.format(started))\(command.isEmpty ? "" : ": " + command)"
        }
    }

    /// The lock's name.
    public let name: String
    private var fd: Int32

    private init(name: String, fd: Int32) {
        self.name = name
        self.fd = fd
    }

    deinit { release() }

    /// Where lock files live: `$BATON_LOCK_DIR`, else `$XDG_RUNTIME_DIR/baton/locks`, else
    /// `$XDG_STATE_HOME/baton/locks` (else `~/.local/state/baton/locks`).
    public static var folder: String {
        let environment = ProcessInfo.processInfo.environment
        if let dir = environment["BATON_LOCK_DIR"], !dir.isEmpty { return dir }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/baton/locks" }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/baton/locks" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state/baton/locks"
    }

    /// Why `name` cannot name a lock, or nil: letters, digits, `.`, `_` and `-`, 1 to 100 of them.
    public static func problem(with name: String) -> String? {
        let allowed = name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2e || c == 0x5f || c == 0x2d
        }
        guard !name.isEmpty, name.utf8.count <= 100, allowed, name.first != "." else {
            return "a lock name is 1 to 100 letters, digits, '.', '_' or '-' (not starting with '.'), got \"\(name)\""
        }
        return nil
    }

    /// Takes the lock if no one holds it, writing `holder` into its file; nil when another
    /// holds it. Never waits. Throws ``LockError/unusable(_:)`` when the folder is not safe
    /// (see ``checkFolder(_:)``) or the lock's file is not a plain file of its own (a symbolic
    /// link there is refused, never followed).
    public static func tryAcquire(_ name: String, holder: Holder) throws -> NamedLock? {
        if let problem = problem(with: name) { throw LockError.badName(problem) }
        let folder = folder
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw LockError.unusable("cannot make the lock folder \(folder): \(error)")
        }
        try checkFolder(folder)
        let path = folder + "/" + name + ".lock"
        var fd = try openFile(path, O_RDWR | O_CREAT)
        while true {
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                close(fd)
                return nil
            }
            // ``prune()`` may have removed the file between our open and our lock: a lock on
            // a file no longer at its name excludes no one. Then again, on the file there now.
            if isAtPath(fd, path) { break }
            close(fd)
            fd = try openFile(path, O_RDWR | O_CREAT)
        }
        let bytes = Array((holder.json + "\n").utf8)
        ftruncate(fd, 0)
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return NamedLock(name: name, fd: fd)
    }

    /// Refuses a lock folder another user could write to, as OpenSSH's StrictModes does: it
    /// must be a folder owned by this user or root, not writable by group or others; else
    /// another user could plant a symbolic link as a lock file, or hold a lock for ever.
    public static func checkFolder(_ folder: String = folder) throws {
        var info = stat()
        guard stat(folder, &info) == 0 else {
            throw LockError.unusable("cannot use the lock folder \(folder): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw LockError.unusable("the lock folder \(folder) is not a folder") }
        let me = geteuid()
        guard info.st_uid == me || info.st_uid == 0 else {
            throw LockError.unusable(
                "the lock folder \(folder) belongs to uid \(info.st_uid), not to you (uid \(me)) or root: another user could hold "
                    + "or replace its locks; point BATON_LOCK_DIR at a folder of your own")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw LockError.unusable(
                "the lock folder \(folder) is writable by others (mode \(String(info.st_mode & 0o7777, radix: 8))): another user "
                    + "could plant or hold its locks; make it private (chmod go-w \(folder)) or point BATON_LOCK_DIR at a private folder")
        }
    }

    /// Opens the lock file `path` without following a symbolic link, and checks that it is a
    /// plain file.
    private static func openFile(_ path: String, _ flags: Int32) throws -> Int32 {
        let fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { throw LockError.unusable("\(path) is a symbolic link, not a lock file: refused, not followed (remove it)") }
            throw LockError.unusable("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw LockError.unusable("\(path) is not a plain file, not a lock file: refused (remove it)")
        }
        return fd
    }

    /// Lets go of the lock (the file stays, saying who held it last). Twice does nothing.
    public func release() {
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
        fd = -1
    }

    /// Whether it is still held by this object.
    public var isHeld: Bool { fd >= 0 }

    /// What the lock named `name` is now: held (and by whom, as its file says), or free.
    /// A lock file that is not a plain file (a symbolic link) counts as free, with no holder.
    public static func status(of name: String) -> (held: Bool, holder: Holder?) {
        let path = folder + "/" + name + ".lock"
        guard let fd = try? openFile(path, O_RDONLY) else { return (false, nil) }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = pread(fd, &bytes, bytes.count, 0)
        let holder = n > 0 ? Holder(json: String(decoding: bytes[..<n], as: UTF8.self)) : nil
        // A shared lock succeeds only when no one holds the exclusive one.
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return (true, holder) }
        flock(fd, LOCK_UN)
        return (false, holder)
    }

    /// Whether the open file `fd` is the one at `path` now.
    private static func isAtPath(_ fd: Int32, _ path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// Removes the files of the locks nobody holds, and returns their names. A held lock is
    /// never touched: each file is removed while this process holds its lock, and a run that
    /// opened it just before takes the lock, finds the file gone from its name, and takes the
    /// file there now instead (``tryAcquire(_:holder:)``).
    public static func prune() throws -> [String] {
        try checkFolder(folder)
        var removed: [String] = []
        for name in names() where problem(with: name) == nil {
            let path = folder + "/" + name + ".lock"
            guard let fd = try? openFile(path, O_RDWR) else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if isAtPath(fd, path), unlink(path) == 0 { removed.append(name) }
        }
        return removed
    }

    /// The names of the locks that have a file in ``folder``.
    public static func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return files.filter { $0.hasSuffix(".lock") }.map { String($0.dropLast(".lock".count)) }.sorted()
    }
}

/// Why a lock could not be used at all (not: that another holds it). Both are the caller's to
/// fix (a name, the lock folder), so a run ends with exit 2 (usage), not 75: waiting would not help.
public enum LockError: Error, CustomStringConvertible {
    case badName(String)
    case unusable(String)

    public var description: String {
        switch self {
        case .badName(let text), .unusable(let text): text
        }
    }
}
