import BatonCore
import Foundation
import Logging
import NIOCore

extension Agent {
    /// A player for each app configured with one. An mpv without a socket of its own gets one
    /// in the runtime directory, named after the device and the app.
    static func makePlayers(for configuration: AgentConfiguration, on loop: any EventLoop, logger: Logger) -> [String: any Player] {
        var players: [String: any Player] = [:]
        for app in configuration.apps {
            switch app.player {
            case nil:
                continue
            case .mpv(let socket, let arguments, let executable):
                let path = socket ?? defaultSocket(device: configuration.device.id, app: app.info.id)
                players[app.info.id] = MPVPlayer(socket: path, arguments: arguments, executable: executable, on: loop, logger: logger)
            case .mpd(let host, let port, let musicDirectory, let timeout):
                let player = MPDPlayer(host: host, port: port, musicDirectory: musicDirectory, on: loop, logger: logger)
                player.callTimeout = .nanoseconds(Int64(timeout * 1e9))
                players[app.info.id] = player
            }
        }
        return players
    }

    /// `$XDG_RUNTIME_DIR` (else the temporary directory) `/baton-mpv-DEVICE-APP.sock`, short
    /// enough for a Unix socket.
    static func defaultSocket(device: String, app: String) -> String {
        let folder = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let name = "baton-mpv-\(device.prefix(8))-\(app.suffix(24)).sock"
        return (folder.hasSuffix("/") ? folder : folder + "/") + name
    }

    /// A launch on a player app: plays `uri` from `data.position` (seconds, default 0),
    /// `success` once the player proves it; `unknown` with why when it does not.
    func play(_ uri: String, app id: String, data: ValueDictionary) -> EventLoopFuture<(LaunchStatus, String)> {
        guard let player = players[id] else { return runtime.eventLoop.makeSucceededFuture((.appUnavailable, "\(id) has no player")) }
        let request = PlaybackCommand.PlayRequest(
            queue: [uri], position: max(0, data.number("position") ?? 0), paused: data.bool("paused") ?? false)
        do { try PlaybackService.checkReadable(uri) } catch {
            return runtime.eventLoop.makeSucceededFuture((.unknown, error.description))
        }
        return player.play(request).map { _ in (LaunchStatus.success, "") }
            .recover { error in (.unknown, "\(error)") }
            .hop(to: runtime.eventLoop)
    }
}
