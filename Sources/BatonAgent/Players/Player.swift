import BatonCore
import BatonNet
import NIOCore

/// A player an app is backed by: what the agent's `baton.playback` drives. Calls may come
/// from any thread; each ends by its deadline, with its value or a ``PlaybackFailure``.
public protocol Player: AnyObject, Sendable {
    /// What it plays now.
    func state() -> EventLoopFuture<PlaybackState>
    /// Plays as asked, answered once the player proved it (see ``PlaybackProof``).
    func play(_ request: PlaybackCommand.PlayRequest) -> EventLoopFuture<PlaybackProof>
    /// Does one of `pause`, `resume`, `stop`, `seek`, `volume`, `mute`.
    func control(_ command: PlaybackCommand) -> EventLoopFuture<Void>
    /// Starts reaching the player (attaching, or starting one), so the first request finds it.
    func start()
    /// Lets the player go: one the agent started is stopped, one it attached to is left playing.
    func shutdown() -> EventLoopFuture<Void>
}

/// How an app's player is configured (`player = {...}` in agent.lua).
public enum PlayerConfiguration: Sendable, Equatable {
    /// mpv over its JSON IPC at `socket` (nil: a path of the agent's own); attached to when one
    /// listens there, else started with `arguments` added.
    case mpv(socket: String?, arguments: [String], executable: String)
    /// A running MPD at `host`:`port` whose music directory is `musicDirectory`; a command
    /// waits `timeout` seconds at most for its answer.
    case mpd(host: String, port: Int, musicDirectory: String?, timeout: Double = 2)
}

extension PlaybackFailure {
    /// A failure of the player itself, for errors of its connection.
    static func player(_ what: String, _ error: any Error) -> PlaybackFailure {
        if let failure = error as? PlaybackFailure { return failure }
        return .player("\(what): \(ErrorWords.of(error))")
    }
}
