import NIOCore

extension PeerConnection {
    /// This connection once its handshake is done, or a failure: a peer that took the link
    /// and says nothing hears Goodbye `timeout` when `timeout` passes ("no HelloAck within the
    /// connect timeout"). Every dialer ends with it, so no link kind waits for ever.
    public func handshake(within timeout: TimeAmount) -> EventLoopFuture<PeerConnection> {
        let deadline = eventLoop.scheduleTask(in: timeout) { [self] in
            goodbye(.timeout, "no HelloAck within the connect timeout")
        }
        return handshakeDone.always { _ in deadline.cancel() }.map { self }
    }
}
