/// What went wrong on the wire.
public enum WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer broke the framing rules of Protocol/baton.proto (a bad length prefix, a payload
    /// that is not a `Frame`, a frame of a kind we do not know, a stream cut mid-frame). The
    /// connection cannot continue: send Goodbye `REASON_PROTOCOL_ERROR` with this reason as
    /// detail and close it.
    case protocolError(String)
    /// A frame we were about to send is `size` bytes, over the `limit` the peer accepts. Nothing
    /// was written; send less data in one message.
    case frameTooLarge(size: Int, limit: Int)
    /// A frame we were about to send cannot go on the wire (it has no body, or the protobuf
    /// serializer refused it). Nothing was written.
    case unsendableFrame(String)

    public var description: String {
        switch self {
        case .protocolError(let reason):
            "protocol error: \(reason)"
        case .frameTooLarge(let size, let limit):
            "frame of \(size) bytes is over the peer's limit of \(limit) bytes; send less data in one message"
        case .unsendableFrame(let reason):
            "cannot send frame: \(reason)"
        }
    }
}
