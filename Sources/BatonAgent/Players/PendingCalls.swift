import NIOCore

/// The calls of a player connection that wait for their answers, by id, each failed at its
/// deadline: the bookkeeping of connections whose answers name their call (mpv's JSON IPC,
/// Kodi's JSON-RPC). Confined to the connection's loop.
final class PendingCalls<Answer: Sendable>: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private var nextID: Int64 = 1
    private var waiting: [Int64: (promise: EventLoopPromise<Answer>, timer: Scheduled<Void>)] = [:]

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// A new call: its id, and its answer, failed with `expired()` after `timeout`.
    func add(timeout: TimeAmount, expired: @escaping @Sendable () -> any Error) -> (id: Int64, answer: EventLoopFuture<Answer>) {
        let id = nextID
        nextID += 1
        let promise = eventLoop.makePromise(of: Answer.self)
        let timer = eventLoop.scheduleTask(in: timeout) { [self] () -> Void in
            waiting.removeValue(forKey: id)?.promise.fail(expired())
        }
        waiting[id] = (promise, timer)
        return (id, promise.futureResult)
    }

    /// Answers call `id`; an id no call waits under (one that timed out) is ignored.
    func complete(_ id: Int64, with result: Result<Answer, any Error>) {
        guard let call = waiting.removeValue(forKey: id) else { return }
        call.timer.cancel()
        call.promise.completeWith(result)
    }

    /// Fails every call still waiting with `error`.
    func failAll(_ error: any Error) {
        let calls = waiting.values
        waiting = [:]
        for call in calls {
            call.timer.cancel()
            call.promise.fail(error)
        }
    }
}
