import BatonCore
import NIOCore

/// `player = { backend = "mpd", address = "HOST:PORT", music_directory = DIR, timeout = s }`:
/// a running MPD (default 127.0.0.1:6600) whose music directory is `music_directory`; a command
/// waits `timeout` seconds at most for its answer (default 2).
struct MPDBackend: PlayerBackend {
    static let name = "mpd"
    static let fields: Set<String> = ["address", "music_directory", "timeout"]

    var address: RemoteDevice.Endpoint
    var musicDirectory: String?
    var timeout: Double

    init(_ fields: PlayerFields) throws {
        address = try fields.endpoint("address", default: "127.0.0.1:6600")
        musicDirectory = try fields.string("music_directory")
        timeout = try fields.seconds("timeout", atMost: 600) ?? 2
    }

    func makePlayer(_ context: PlayerContext) -> any Player {
        let player = MPDPlayer(host: address.host, port: address.port, musicDirectory: musicDirectory, on: context.eventLoop, logger: context.logger)
        player.callTimeout = .nanoseconds(Int64(timeout * 1e9))
        return player
    }
}
