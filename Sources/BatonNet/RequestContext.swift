import NIOCore

/// One request from the peer, as whatever serves it sees it: when its answer is due, and
/// whether it is still wanted. It is cancelled when its deadline passes before the answer (the
/// peer then hears a timeout status) or the connection ends; its server stops the work then (a
/// Lua task is cancelled, an argv launch is not waited on). Confined to the connection's loop.
public final class RequestContext: @unchecked Sendable {
    /// When the peer stops waiting.
    public let deadline: NIODeadline
    /// The connection's loop, the only one that may touch the context.
    public let eventLoop: any EventLoop
    /// What the request's refusal needs (its kind and ids), and how long the peer waits, for
    /// the words of a timeout.
    let head: RequestHead
    let timeout: TimeAmount
    /// Whether the request was given up: its deadline passed, or its connection ended.
    public private(set) var isCancelled = false
    /// What runs when it is given up: usually one handler, kept without an array.
    private var cancellation: (() -> Void)?
    private var moreCancellations: [() -> Void] = []

    /// The request `head`, due `timeout` after `start`, served on `eventLoop`.
    init(_ head: RequestHead, start: NIODeadline, timeout: TimeAmount, on eventLoop: any EventLoop) {
        self.head = head
        self.deadline = start + timeout
        self.timeout = timeout
        self.eventLoop = eventLoop
    }

    /// Runs `body` when the request is given up (at once if it already is). Not run once the
    /// request is answered.
    public func whenCancelled(_ body: @escaping () -> Void) {
        eventLoop.assertInEventLoop()
        if isCancelled { return body() }
        if cancellation == nil {
            cancellation = body
        } else {
            moreCancellations.append(body)
        }
    }

    /// Gives the request up: its cancellation handlers run, once.
    func cancel() {
        eventLoop.assertInEventLoop()
        guard !isCancelled else { return }
        isCancelled = true
        let first = cancellation, rest = moreCancellations
        finish()
        first?()
        for handler in rest { handler() }
    }

    /// The request was answered: nothing is run for it any more.
    func finish() {
        cancellation = nil
        moreCancellations = []
    }
}
