#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Baton's folder of this device's secrets and identity: `$XDG_CONFIG_HOME/baton`, else
/// `~/.config/baton`. Made with mode 0700; keys in it are written 0600, whole or not at all.
public struct ConfigurationFolder: Sendable, Hashable {
    /// The folder's path.
    public let path: String

    /// The folder at `path`.
    public init(path: String) {
        self.path = path
    }

    /// `$XDG_CONFIG_HOME/baton`, else `$HOME/.config/baton`.
    public static var standard: ConfigurationFolder {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_CONFIG_HOME"], !xdg.isEmpty { return ConfigurationFolder(path: xdg + "/baton") }
        return ConfigurationFolder(path: (env["HOME"] ?? "/root") + "/.config/baton")
    }

    /// The path of `name` in the folder.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Makes the folder (and its parents) if it is missing, and sets it to 0700.
    public func create() throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw SecurityError.storage("cannot create \(path): \(error.localizedDescription)")
        }
        guard chmod(path, 0o700) == 0 else { throw SecurityError.storage("cannot make \(path) private: \(String(cString: strerror(errno)))") }
    }

    /// Runs `body` holding the folder's lock (`flock` on `lock`), so that two processes making
    /// the account at once make one; `name` names another lock file, for files that change
    /// apart from the account (the pins of the devices met).
    public func withLock<T>(_ name: String = "lock", _ body: () throws -> T) throws -> T {
        try create()
        let fd = open(file(name), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SecurityError.storage("cannot open \(file(name)): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw SecurityError.storage("cannot lock \(file(name)): \(String(cString: strerror(errno)))") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// The text of `name`, or nil if there is no such file.
    public func read(_ name: String) throws -> String? {
        let path = file(name)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SecurityError.storage("cannot read \(path): \(error.localizedDescription)")
        }
    }

    /// Writes `text` to `name` with `mode`, through a temporary file renamed into place, so a
    /// reader sees the old file or the new one, never half of one.
    public func write(_ text: String, to name: String, mode: mode_t = 0o600) throws {
        let path = file(name)
        let temporary = path + ".tmp.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SecurityError.storage("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw SecurityError.storage("cannot write \(temporary): \(reason)")
            }
            written += n
        }
        // The mode asked for, whatever the umask made of it.
        fchmod(fd, mode)
        fsync(fd)
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw SecurityError.storage("cannot write \(path): \(reason)")
        }
    }

    /// This device's id: a lower-case UUID kept in `device-id`, made on first use.
    public func deviceID() throws -> String {
        if let id = try Self.parseID(read("device-id")) { return id }
        return try withLock {
            if let id = try Self.parseID(read("device-id")) { return id }
            let id = UUID().uuidString.lowercased()
            try write(id + "\n", to: "device-id", mode: 0o644)
            return id
        }
    }

    /// The lower-case UUID in `text` (a `device-id` file's), or nil if there is none.
    static func parseID(_ text: String?) -> String? {
        guard let text, let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        return id.uuidString.lowercased()
    }
}
