import BatonCore
import BatonNet
import NIOCore

extension MPVConnection {
    /// Seeks (`arguments`: mpv's `seek` command), answered once mpv plays (or holds, paused)
    /// from where it landed: its `playback-restart` (or `end-file`) after the command. Until
    /// then mpv's position is where it was asked to go, not where it lands (a paused mpv that
    /// played before lands up to its audio buffer earlier), so a reading taken before would lie. Fails
    /// as ``command(_:timeout:)`` does, or ``MPVError/timedOut(_:)`` without a restart by `timeout`.
    public func seek(_ arguments: JSON, timeout: TimeAmount? = nil) -> EventLoopFuture<Void> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.seek(arguments, timeout: timeout) }
        }
        let wait = timeout ?? callTimeout
        let seek = SeekWait(promise: eventLoop.makePromise(of: Void.self))
        seek.stopWatching = watchEvents { event in
            // Only a restart after mpv took the command counts: one of an earlier seek may be on
            // its way. A seek past the end ends the file instead: the state after says so.
            if event.name == "playback-restart" || event.name == "end-file", seek.acknowledged { seek.finish(nil) }
        }
        seek.timer = eventLoop.scheduleTask(in: wait) {
            seek.finish(MPVError.timedOut("mpv did not play again within \(wait.words) of a seek"))
        }
        command(arguments, timeout: wait).whenComplete { result in
            switch result {
            case .success: seek.acknowledged = true
            case .failure(let error): seek.finish(error)
            }
        }
        return seek.promise.futureResult
    }
}

/// One ``MPVConnection/seek(_:timeout:)`` under way. Confined to the connection's loop.
private final class SeekWait: @unchecked Sendable {
    let promise: EventLoopPromise<Void>
    var acknowledged = false
    var stopWatching: (() -> Void)?
    var timer: Scheduled<Void>?
    private var done = false

    init(promise: EventLoopPromise<Void>) {
        self.promise = promise
    }

    /// Ends the wait, with `error` or (nil) done; once.
    func finish(_ error: (any Error)?) {
        guard !done else { return }
        done = true
        timer?.cancel()
        stopWatching?()
        stopWatching = nil
        if let error { promise.fail(error) } else { promise.succeed(()) }
    }
}
