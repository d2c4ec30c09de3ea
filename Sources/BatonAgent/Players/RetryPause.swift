import NIOCore

/// How long a player that went away (or never came) is left before it is tried again: 0.2 s,
/// doubling with each failure up to 30 s, and 0.2 s again once a connection has lasted a
/// minute. Shared by the players' reconnections so that one that keeps failing at once (or
/// answers garbage) is tried ever more slowly, and one that dies now and then comes back fast.
struct RetryPause {
    static let first: TimeAmount = .milliseconds(200)
    static let most: TimeAmount = .seconds(30)
    /// How long a connection must last for its loss to start the pauses over.
    static let settled: TimeAmount = .seconds(60)

    private var pause = Self.first
    private var connectedAt: NIODeadline?

    /// A connection was made now.
    mutating func connected() {
        connectedAt = .now()
    }

    /// The pause before the next try (the one after it is doubled).
    mutating func next() -> TimeAmount {
        if let connectedAt, NIODeadline.now() - connectedAt > Self.settled { pause = Self.first }
        connectedAt = nil
        defer { pause = min(pause * 2, Self.most) }
        return pause
    }

    /// The pause the next try after this one will wait.
    var following: TimeAmount { pause }
}
