import NIOCore

/// How a player that went away (or never came) is tried again: after 0.2 s, doubling with each
/// failure up to 30 s, and 0.2 s again once a connection has lasted a minute. Shared by the
/// players' reconnections so that one that keeps failing at once (or answers garbage) is tried
/// ever more slowly, and one that dies now and then comes back fast. Confined to the player's
/// loop.
final class RetryPause: @unchecked Sendable {
    static let first: TimeAmount = .milliseconds(200)
    static let most: TimeAmount = .seconds(30)
    /// How long a connection must last for its loss to start the pauses over.
    static let settled: TimeAmount = .seconds(60)

    private var pause = RetryPause.first
    private var connectedAt: NIODeadline?

    /// A connection was made now.
    func connected() {
        connectedAt = .now()
    }

    /// The pause before the next try (the one after it is doubled).
    func next() -> TimeAmount {
        if let connectedAt, NIODeadline.now() - connectedAt > Self.settled { pause = Self.first }
        connectedAt = nil
        defer { pause = min(pause * 2, Self.most) }
        return pause
    }

    /// The pause the next try after this one will wait.
    var following: TimeAmount { pause }

    /// Runs `attempt` on `loop` after the next pause, while `wanted()` holds (the player is not
    /// stopping and has no connection); when it fails, tells `failed` why (``following`` is
    /// then the pause before the next try) and tries again.
    func retry<T>(
        on loop: any EventLoop, while wanted: @escaping @Sendable () -> Bool, _ attempt: @escaping @Sendable () -> EventLoopFuture<T>,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        guard wanted() else { return }
        loop.scheduleTask(in: next()) { [self] () -> Void in
            guard wanted() else { return }
            attempt().whenFailure { [self] error in
                failed(error)
                retry(on: loop, while: wanted, attempt, failed: failed)
            }
        }
    }
}
