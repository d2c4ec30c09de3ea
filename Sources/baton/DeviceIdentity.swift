#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// This device's id: a UUID kept in the configuration folder, made on first use.
enum DeviceIdentity {
    /// `$XDG_CONFIG_HOME/baton`, else `~/.config/baton`.
    static var folder: String {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/baton" }
        return (env["HOME"] ?? "/root") + "/.config/baton"
    }

    static func load() throws -> String {
        let path = folder + "/device-id"
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return id.uuidString.lowercased()
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let id = UUID().uuidString.lowercased()
        // Write then rename, so two agents starting at once never read half an id.
        let temporary = path + ".\(getpid())"
        try (id + "\n").write(toFile: temporary, atomically: false, encoding: .utf8)
        if link(temporary, path) != 0 {
            unlink(temporary)
            return try load()
        }
        unlink(temporary)
        return id
    }
}
