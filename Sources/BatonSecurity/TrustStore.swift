import NIOConcurrencyHelpers
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// What an agent or a client trusts for as long as it runs: this device's credentials and the
/// account's revocation list, kept current. A list received from a peer
/// (``adopt(revocationListText:)``) applies from the next ``trust`` on; one written to the folder
/// by another process (`baton account revoke`), from the next ``refresh()``. ``trust`` and
/// ``revocationListText`` never touch the disk, so an event loop may ask them; ``refresh()`` and
/// ``adopt(revocationListText:)`` read and write files, and may wait for the folder's lock.
/// Safe to use from any thread.
public final class TrustStore: Sendable {
    /// The configuration folder the revocation list is kept in.
    public let folder: ConfigurationFolder
    /// This device's credentials.
    public let credentials: DeviceCredentials
    /// The devices met before, pinned to what their handshakes proved.
    public let known: KnownDevices

    private struct State {
        var revocations: RevocationList
        /// The signed text `revocations` was read from; nil when the folder has none.
        var text: String?
        /// The file as it was when read; when `stat` says otherwise, it is read again.
        var stamp: FileStamp?
    }

    /// What distinguishes one version of a file from the next: a rename into place changes the
    /// inode even within one tick of the clock.
    private struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var seconds: Int
        var nanoseconds: Int
    }

    private let state: NIOLockedValueBox<State>

    /// A store for `credentials`, reading the revocation list from `folder`. Throws if the list
    /// there is damaged or not the account's.
    public init(folder: ConfigurationFolder, credentials: DeviceCredentials) throws {
        self.folder = folder
        self.credentials = credentials
        self.known = KnownDevices(folder: folder, own: credentials.fingerprint)
        let stamp = Self.stamp(of: folder.file(RevocationList.file))
        let (list, text) = try Self.readList(in: folder, credentials: credentials)
        state = NIOLockedValueBox(State(revocations: list, text: text, stamp: stamp))
    }

    /// The trust decisions as of now, with the revocation list last read or adopted.
    public var trust: PeerTrust {
        PeerTrust(credentials: credentials, revocations: state.withLockedValue { $0.revocations })
    }

    /// The signed revocation list to pass on to peers (in Hello); nil when the account has none.
    public var revocationListText: String? {
        state.withLockedValue { $0.text }
    }

    /// Reads the folder's revocation list again if its file changed since the last look (one
    /// `stat` otherwise). A list that changed into something that does not check out is
    /// ignored, and the last good one kept. Blocks on the disk: call it off any event loop.
    public func refresh() {
        _ = current()
    }

    /// Whether `text` is this account's revocation list, signed by its CA, and newer than the
    /// one kept: what ``adopt(revocationListText:)`` would take. Reads no file.
    ///
    /// - Throws: ``SecurityError`` for a list that is changed, another account's or unreadable.
    public func isNewer(revocationListText text: String) throws -> Bool {
        let offered = try RevocationList.verify(text, accountCertificate: credentials.accountCertificate)
        return offered.version > state.withLockedValue { $0.revocations.version }
    }

    /// Takes a revocation list a peer passed on: if it is this account's, signed by its CA, and
    /// newer than the one kept, it is stored in the folder and applies from the next ``trust``
    /// on. Returns whether it was taken; false for one that is not newer. Throws
    /// ``SecurityError`` for a list that is changed, another account's or unreadable (a line
    /// for the log: the peer sent something it should not have), or when the folder cannot be
    /// written.
    @discardableResult
    public func adopt(revocationListText text: String) throws -> Bool {
        guard try isNewer(revocationListText: text) else { return false }
        // Outside the lock: this waits for the folder's lock, which another process may hold.
        guard try RevocationList.adopt(text, in: folder, accountCertificate: credentials.accountCertificate) else { return false }
        _ = current()
        return true
    }

    /// The state, after reading the list again if its file changed.
    private func current() -> State {
        state.withLockedValue { state in
            let stamp = Self.stamp(of: folder.file(RevocationList.file))
            guard stamp != state.stamp else { return state }
            state.stamp = stamp
            if let (list, text) = try? Self.readList(in: folder, credentials: credentials) {
                state.revocations = list
                state.text = text
            }
            return state
        }
    }

    private static func readList(in folder: ConfigurationFolder, credentials: DeviceCredentials) throws -> (RevocationList, String?) {
        guard let text = try folder.read(RevocationList.file) else {
            return (RevocationList(account: credentials.fingerprint, version: 0, entries: []), nil)
        }
        return (try RevocationList.verify(text, accountCertificate: credentials.accountCertificate), text)
    }

    private static func stamp(of path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(inode: UInt64(info.st_ino), size: Int64(info.st_size),
                         seconds: Int(info.st_mtim.tv_sec), nanoseconds: Int(info.st_mtim.tv_nsec))
    }
}
