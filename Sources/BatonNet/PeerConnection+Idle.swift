import NIOCore

extension PeerConnection {
    /// Whether nothing is under way on it: no request of this side waits for its answer, no
    /// channel is open, and no request of the peer is being answered. A client lets go of a
    /// connection it no longer hands out (one a direct link replaced) once it is idle, so that
    /// what runs on it ends there. Ask on ``eventLoop``.
    public var isIdle: Bool {
        eventLoop.preconditionInEventLoop()
        return multiplexer.pendingCount == 0 && multiplexer.channelCount == 0 && inFlight.isEmpty
    }
}
