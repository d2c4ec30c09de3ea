import NIOCore

/// Writes frames (Protocol/baton.proto, FRAMING): an unsigned varint length, then the
/// serialized `Frame`. Use it as `MessageToByteHandler(FrameEncoder(limits:))`.
public struct FrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = Baton_V1_Frame

    /// The limits the *peer* announced: larger frames are refused, not sent.
    public let limits: FrameLimits

    public init(limits: FrameLimits = FrameLimits()) {
        self.limits = limits
    }

    /// Appends `data`, framed, to `out`.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)`` over the peer's limit, or
    ///   ``WireError/unsendableFrame(_:)`` for a frame with no body; `out` is then unchanged.
    public func encode(data: Baton_V1_Frame, out: inout ByteBuffer) throws(WireError) {
        try Self.encode(data, into: &out, maxFrameSize: limits.maxFrameSize)
    }

    /// Appends `frame`, framed, to `out`, refusing frames over `maxFrameSize` bytes.
    public static func encode(
        _ frame: Baton_V1_Frame, into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) {
        guard frame.body != nil else { throw .unsendableFrame("frame has no body") }
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed(frame)
        guard size <= maxFrameSize else { throw .frameTooLarge(size: size, limit: maxFrameSize) }
        writer.append(to: &out)
    }
}
