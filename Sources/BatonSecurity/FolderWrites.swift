import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Writes to files of the configuration folder made off the caller's thread (a handshake's
/// verification runs on an event loop, and the folder's lock may be held by another process),
/// one after another, and finished before the process exits (`exit`, or `main` returning).
/// The pins (``KnownDevices``) and the routes devices were reached at go through it.
public enum FolderWrites {
    private static let queue = DispatchQueue(label: "baton.folder-writes")
    private static let flushedAtExit: Void = { atexit { FolderWrites.queue.sync {} } }()

    /// Queues `body`; it runs after every write queued before it.
    public static func async(_ body: @escaping @Sendable () -> Void) {
        _ = flushedAtExit
        queue.async(execute: body)
    }

    /// Runs `body` after every write queued so far, and waits for it.
    public static func sync<T>(_ body: () throws -> T) rethrows -> T {
        _ = flushedAtExit
        return try queue.sync(execute: body)
    }

    /// Waits until every write queued so far is done.
    public static func flush() {
        queue.sync {}
    }
}
