import BatonCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A batch's journal (`baton batch --journal DIR`, README "Batches"): `DIR/journal.jsonl`, a
/// header line (the batch id, the script's and input's SHA-256, the policy), then one JSON
/// record a line, each appended and fsynced before the caller goes on.
///
/// While a runner uses it, it holds a kernel lock (`flock`) on `DIR/journal.lock`, which says
/// who holds it (pid, host, start): a second runner is refused with ``JournalError/held(_:path:)``.
/// The header is written with exclusive create and fsynced, the folder too. Opening an existing
/// journal cuts a torn tail (bytes after the last newline, left by a runner killed mid-write)
/// before anything is appended, as SQLite and journald do; a journal whose first line is not a
/// valid header is refused. A write that fails is undone (truncated back) and the journal is
/// marked failed: nothing more is appended and the batch must fail.
public final class BatchJournal: @unchecked Sendable {
    /// The journal file's path.
    public let path: String
    /// What the first write puts first, for a journal not yet created; nil once written.
    private var pendingHeader: String?
    private var fd: Int32 = -1
    private let lockFD: Int32
    private let mutex = Mutex<Void>(())
    private let failed = Mutex<String?>(nil)

    /// Who holds a journal's lock, as its lock file says.
    public struct Holder: Sendable, CustomStringConvertible {
        public var pid: Int32
        public var host: String
        public var started: Date
        public var command: String

        /// `pid 4242 on host "tv-box", since 2026-11-24T03:00:00.000Z (baton batch ...)`.
        public var description: String {
            "pid \(pid) on host \"\(host)\", since \(ISO8601.format(started))\(command.isEmpty ? "" : " (\(command))")"
        }
    }

    /// Why a journal cannot be used.
    public enum JournalError: Error, CustomStringConvertible {
        /// Another runner uses it now (exit 75).
        case held(Holder?, path: String)
        /// It cannot be used as it is (exit 2): no valid header, a damaged line, already a batch.
        case refused(String)
        /// It could not be read or written (exit 74).
        case io(String)

        public var description: String {
            switch self {
            case .held(let holder, let path):
                "the journal \(path) is in use by another runner: \(holder?.description ?? "its holder is not known")"
            case .refused(let text), .io(let text): text
            }
        }
    }

    /// What a journal held when it was opened to resume.
    public struct Contents: Sendable {
        /// The header's fields: kind "batch", id, script, script_sha256, input, input_sha256, policy.
        public var header: JSON
        /// The batch id the header names.
        public var id: String
        /// The keys of items with a start record.
        public var started: Set<String> = []
        /// The last end status of each item that has one.
        public var ended: [String: String] = [:]
        /// The bytes of a torn last line that were cut (0 when the journal ended cleanly).
        public var cutBytes = 0
        /// Lines in the middle that could not be read (numbers from 1), skipped with --force.
        public var damagedLines: [Int] = []
    }

    /// The exit code of a batch whose journal or report could not be written (EX_IOERR).
    public static let writeFailedExitCode: Int32 = 74

    /// The journals this process has open, by path: `baton.batch`'s `journal` option names one.
    private static let openJournals = Mutex<[String: BatchJournal]>([:])

    /// The journal at `path` this process opened, if any.
    public static func registered(_ path: String) -> BatchJournal? {
        openJournals.withLock { $0[path] }
    }

    private init(path: String, lockFD: Int32, fd: Int32, pendingHeader: String?) {
        self.path = path
        self.lockFD = lockFD
        self.fd = fd
        self.pendingHeader = pendingHeader
        Self.openJournals.withLock { $0[path] = self }
    }

    /// Starts a new journal in `folder` (made if missing): locks it, and refuses one that holds
    /// a batch already. The header is written, exclusively created and fsynced, by the first
    /// ``append(_:)`` or ``writeHeader()``, so a batch that never starts leaves no journal.
    public static func create(folder: String, header: JSON, holder command: String) throws -> BatchJournal {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw JournalError.io("cannot make the journal folder \(folder): \(error)")
        }
        let path = folder + "/journal.jsonl"
        let lock = try takeLock(folder: folder, path: path, command: command)
        if access(path, F_OK) == 0 {
            Glibc.close(lock)
            throw JournalError.refused("\(path) already holds a batch: --resume it, or give another --journal")
        }
        return BatchJournal(path: path, lockFD: lock, fd: -1, pendingHeader: header.serialized() + "\n")
    }

    /// Opens the journal in `folder` to continue its batch: locks it, reads it, cuts a torn
    /// tail, and refuses one without a valid header (and, unless `force`, one with a damaged
    /// line in the middle).
    public static func resume(folder: String, force: Bool, holder command: String) throws -> (BatchJournal, Contents) {
        let path = folder + "/journal.jsonl"
        guard access(path, F_OK) == 0 else { throw JournalError.refused("no journal at \(path) to resume") }
        let lock = try takeLock(folder: folder, path: path, command: command)
        do {
            let fd = try openJournal(path)
            let contents = try read(fd: fd, path: path, force: force)
            return (BatchJournal(path: path, lockFD: lock, fd: fd, pendingHeader: nil), contents)
        } catch {
            Glibc.close(lock)
            throw error
        }
    }

    /// Opens a journal a script named (`baton.batch(items, fn, {journal = path})`) that no
    /// command opened: locked by its own file, its torn tail cut, appended to; no header.
    static func forScript(path: String) throws -> BatchJournal {
        if let known = registered(path) { return known }
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw JournalError.io("cannot open the journal \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            Glibc.close(fd)
            throw JournalError.held(nil, path: path)
        }
        try cutTornTail(fd: fd, path: path)
        return BatchJournal(path: path, lockFD: -1, fd: fd, pendingHeader: nil)
    }

    /// Why the journal stopped taking records, or nil while it works.
    public var failure: String? { failed.withLock { $0 } }

    /// Writes the header of a new journal now, if not written yet.
    public func writeHeader() throws {
        try mutex.withLock { _ in try writeHeaderLocked() }
    }

    /// Appends `line` (one JSON record, no newline) and fsyncs it. Blocks: call off the loop.
    /// After a failure every append fails with the first failure's message.
    public func append(_ line: String) throws {
        try mutex.withLock { _ in
            if let failure { throw JournalError.io(failure) }
            do {
                try writeHeaderLocked()
                try write(Array((line + "\n").utf8))
            } catch {
                let message = "\(error)"
                failed.withLock { $0 = $0 ?? message }
                throw error
            }
        }
    }

    private func writeHeaderLocked() throws {
        guard let header = pendingHeader else { return }
        let made = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard made >= 0 else { throw JournalError.io("cannot create the journal \(path): \(String(cString: strerror(errno)))") }
        fd = made
        do {
            try write(Array(header.utf8))
        } catch {
            // A journal without its whole header is no journal: gone, so that a new run may start.
            unlink(path)
            throw error
        }
        // The file's name is durable only once its folder is.
        let folder = open((path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            Glibc.close(folder)
        }
        pendingHeader = nil
    }

    /// Writes `bytes` at the end and fsyncs; on any failure truncates back to where it was.
    private func write(_ bytes: [UInt8]) throws {
        let before = lseek(fd, 0, SEEK_END)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return try undo(to: before, errno: n < 0 ? errno : ENOSPC) }
            done += n
        }
        guard fsync(fd) == 0 else { return try undo(to: before, errno: errno) }
    }

    private func undo(to size: off_t, errno code: Int32) throws {
        if size >= 0 { ftruncate(fd, size) }
        throw JournalError.io("cannot write the journal \(path): \(String(cString: strerror(code)))")
    }

    /// Lets go of the lock and closes the file. Also when the process ends.
    public func close() {
        mutex.withLock { _ in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
        if lockFD >= 0 { Glibc.close(lockFD) }
        Self.openJournals.withLock { $0[path] = nil }
    }
}
