import BatonCore
import Foundation
import Logging
import NIOCore

extension Agent {
    /// A player for each app configured with one, made by its backend.
    static func makePlayers(for configuration: AgentConfiguration, on loop: any EventLoop, logger: Logger) -> [String: any Player] {
        var players: [String: any Player] = [:]
        for app in configuration.apps {
            guard let player = app.player else { continue }
            let context = PlayerContext(device: configuration.device.id, app: app.info.id, eventLoop: loop, logger: logger)
            players[app.info.id] = player.backend.makePlayer(context)
        }
        return players
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
