import BatonCore
import NIOCore

/// `player = { backend = "kodi", address = "HOST:PORT", timeout = s }`: a running Kodi whose
/// JSON-RPC listens on raw TCP at `address` (default 127.0.0.1:9090; Kodi's "allow remote
/// control by programs on this system", `services.esenabled`); a call waits `timeout` seconds at
/// most for its answer (default 2). The agent attaches to it and never starts or stops it.
struct KodiBackend: PlayerBackend {
    static let name = "kodi"
    static let fields: Set<String> = ["address", "timeout"]

    var address: RemoteDevice.Endpoint
    var timeout: Double

    init(_ fields: PlayerFields) throws {
        address = try fields.endpoint("address", default: "127.0.0.1:9090")
        timeout = try fields.seconds("timeout", atMost: 600) ?? 2
    }

    func makePlayer(_ context: PlayerContext) -> any Player {
        let player = KodiPlayer(host: address.host, port: address.port, on: context.eventLoop, logger: context.logger)
        player.callTimeout = .nanoseconds(Int64(timeout * 1e9))
        return player
    }
}
