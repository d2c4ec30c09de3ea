import BatonCore
import Foundation

/// `player = { backend = "mpv", socket = PATH, args = {...}, executable = "mpv" }`: mpv over
/// its JSON IPC at `socket` (default: a path of the agent's own, see ``defaultSocket(device:app:)``),
/// attached to when one listens there, else started with `args` added.
struct MPVBackend: PlayerBackend {
    static let name = "mpv"
    static let fields: Set<String> = ["socket", "args", "executable"]

    var socket: String?
    var arguments: [String]
    var executable: String

    init(_ fields: PlayerFields) throws {
        arguments = try fields.strings("args") ?? []
        socket = try fields.string("socket")
        if let socket, socket.utf8.count > 100 { throw fields.fail("socket path is too long for a Unix socket (at most 100 bytes)") }
        executable = try fields.string("executable") ?? "mpv"
    }

    func makePlayer(_ context: PlayerContext) -> any Player {
        let path = socket ?? Self.defaultSocket(device: context.device, app: context.app)
        return MPVPlayer(socket: path, arguments: arguments, executable: executable, on: context.eventLoop, logger: context.logger)
    }

    /// `$XDG_RUNTIME_DIR` (else the temporary directory) `/baton-mpv-DEVICE-APP.sock`, short
    /// enough for a Unix socket.
    static func defaultSocket(device: String, app: String) -> String {
        let folder = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let name = "baton-mpv-\(device.prefix(8))-\(app.suffix(24)).sock"
        return (folder.hasSuffix("/") ? folder : folder + "/") + name
    }
}
