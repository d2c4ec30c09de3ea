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
    /// Tells `handler` each change the player's own events report, on the player's loop,
    /// until the returned stop is called (on that loop too); across reconnections. Call on
    /// the player's loop.
    func watch(_ handler: @escaping (PlayerChange) -> Void) -> () -> Void
    /// The loop the player lives on.
    var eventLoop: any EventLoop { get }
}

/// Who hears a stream of events (a player's changes, a connection's events or signals): handlers
/// by token, each told every event until it is removed. Confined to one loop.
final class Watchers<Event>: @unchecked Sendable {
    private var handlers: [Int: (Event) -> Void] = [:]
    private var next = 0

    /// Whether anyone listens (a player may skip reading its events when nobody does).
    var isEmpty: Bool { handlers.isEmpty }

    /// Adds `handler`; the answer removes it.
    func add(_ handler: @escaping (Event) -> Void) -> @Sendable () -> Void {
        let token = next
        next += 1
        handlers[token] = handler
        return { [self] in handlers[token] = nil }
    }

    /// Tells every handler `event`.
    func tell(_ event: Event) {
        for handler in handlers.values { handler(event) }
    }

    /// Removes every handler.
    func removeAll() {
        handlers = [:]
    }
}

extension PlaybackFailure {
    /// A failure of the player itself, for errors of its connection.
    static func player(_ what: String, _ error: any Error) -> PlaybackFailure {
        if let failure = error as? PlaybackFailure { return failure }
        return .player("\(what): \(ErrorWords.of(error))")
    }
}

/// How finely a player reports its position and how long its seeks take, in seconds: what
/// its state and proof say (see ``PlaybackState/positionGranularity``).
struct PlayerTiming: Sendable {
    var granularity: Double
    var seekLatency: Double
}

/// What says a player's timing: its state and its proof.
protocol StatesTiming {
    var positionGranularity: Double? { get set }
    var seekLatency: Double? { get set }
}

extension PlaybackState: StatesTiming {}
extension PlaybackProof: StatesTiming {}

extension StatesTiming {
    /// The same, saying `timing`.
    func stating(_ timing: PlayerTiming) -> Self {
        var copy = self
        copy.positionGranularity = timing.granularity
        copy.seekLatency = timing.seekLatency
        return copy
    }
}
