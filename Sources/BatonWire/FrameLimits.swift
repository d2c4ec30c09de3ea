/// How big a frame may be.
public struct FrameLimits: Sendable, Hashable {
    /// The default for both directions when Hello/HelloAck announce 0: 1 MiB.
    public static let defaultMaxFrameSize = 1 << 20
    /// No length prefix may exceed this (1 GiB), whatever was announced: a larger one is a
    /// protocol error, not an oversized frame.
    public static let hardLimit = 1 << 30

    /// The largest frame payload accepted, in bytes, in `1 ... hardLimit`. Larger frames are
    /// skipped (see ``FrameDecoder``) or refused (see ``FrameEncoder``).
    public let maxFrameSize: Int

    /// Limits of `maxFrameSize` bytes, clamped to `1 ... hardLimit`.
    public init(maxFrameSize: Int = FrameLimits.defaultMaxFrameSize) {
        self.maxFrameSize = min(max(maxFrameSize, 1), Self.hardLimit)
    }

    /// The limits a `Hello.max_frame_size` or `HelloAck.max_frame_size` announces: 0 means the
    /// default 1 MiB; anything over the hard limit is clamped to it.
    public init(announced: UInt32) {
        self.init(maxFrameSize: announced == 0 ? Self.defaultMaxFrameSize : Int(announced))
    }
}
