import BatonCore
import NIOCore

/// Writes frames (Protocol/baton.proto, FRAMING): an unsigned varint length, then the
/// serialized `Frame`. Service frames, the hot ones, are written straight from their Values;
/// every other frame through the generated types' hand-written codec. Both write the bytes
/// SwiftProtobuf writes (BatonWireTests checks).
public enum FrameEncoder {
    /// Appends `frame`, framed, to `out`, refusing frames over `maxFrameSize` bytes.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)`` over the limit, or
    ///   ``WireError/unsendableFrame(_:)`` for a service request whose message breaks the
    ///   Value rules; `out` is then unchanged.
    public static func encode(_ frame: Frame, into out: inout ByteBuffer, maxFrameSize: Int) throws(WireError) {
        switch frame {
        case .serviceRequest(let channel, let id, let message, let timeout):
            try encodeServiceRequest(
                channelID: channel, requestID: id, message: message, timeout: timeout, into: &out, maxFrameSize: maxFrameSize)
        case .serviceResponse(let channel, let id, let reply):
            try encodeServiceResponse(channelID: channel, requestID: id, reply: reply, into: &out, maxFrameSize: maxFrameSize)
        default:
            try encode(frame.wire, into: &out, maxFrameSize: maxFrameSize)
        }
    }

    /// Appends `frame` (the generated type), framed, to `out`, refusing frames over
    /// `maxFrameSize` bytes.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)``, or ``WireError/unsendableFrame(_:)``
    ///   for a frame with no body; `out` is then unchanged.
    public static func encode(_ frame: Baton_V1_Frame, into out: inout ByteBuffer, maxFrameSize: Int) throws(WireError) {
        guard frame.body != nil else { throw .unsendableFrame("frame has no body") }
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed(frame)
        try append(writer, size: size, to: &out, limit: maxFrameSize)
    }

    /// Appends a ServiceRequest frame carrying `message`: its checked bytes as they came, or its
    /// Values.
    static func encodeServiceRequest(
        channelID: UInt64, requestID: UInt64, message: ServiceMessage, timeout: UInt32, into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) {
        let values: ValueDictionary?
        if message.isChecked {
            values = nil
        } else {
            switch message.values {
            case .success(let message): values = message
            case .failure(let error): throw .unsendableFrame("the message breaks the Value rules: \(error)")
            }
        }
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed { w in
            w.tag(9, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.tag(3, .lengthDelimited)
                w.lengthPrefixed { w in
                    if let values {
                        w.members(of: values)
                    } else {
                        _ = message.withCheckedFields { w.raw($0) }
                    }
                }
                w.uint32(4, timeout)
            }
        }
        try append(writer, size: size, to: &out, limit: maxFrameSize)
    }

    /// Appends a ServiceResponse frame for `reply`; its message goes with `success` only.
    static func encodeServiceResponse(
        channelID: UInt64, requestID: UInt64, reply: ServiceReply, into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) {
        var writer = ProtoWriter()
        let size = writer.lengthPrefixed { w in
            w.tag(10, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.enumValue(3, Baton_V1_ResponseStatus(reply.status).rawValue)
                if reply.status == .success, let message = reply.message {
                    w.tag(4, .lengthDelimited)
                    w.lengthPrefixed { $0.members(of: message) }
                }
                w.string(5, reply.detail)
            }
        }
        try append(writer, size: size, to: &out, limit: maxFrameSize)
    }

    /// Appends a `success` ServiceResponse whose message `source` writes, framed, to `out`:
    /// the bytes of the same reply made of Values. False (nothing appended) when `source` gives
    /// up.
    ///
    /// - Throws: ``WireError/frameTooLarge(size:limit:)``; `out` is then unchanged.
    package static func encodeServiceResponse(
        channelID: UInt64, requestID: UInt64, source: some MessageSource, into out: inout ByteBuffer, maxFrameSize: Int
    ) throws(WireError) -> Bool {
        var writer = ProtoWriter()
        var written = true
        let size = writer.lengthPrefixed { w in
            w.tag(10, .lengthDelimited)
            w.lengthPrefixed { w in
                w.uint64(1, channelID)
                w.uint64(2, requestID)
                w.enumValue(3, Baton_V1_ResponseStatus.success.rawValue)
                w.tag(4, .lengthDelimited)
                w.lengthPrefixed { written = source.writeMembers(to: &$0) }
            }
        }
        guard written else { return false }
        try append(writer, size: size, to: &out, limit: maxFrameSize)
        return true
    }

    private static func append(_ writer: borrowing ProtoWriter, size: Int, to out: inout ByteBuffer, limit: Int) throws(WireError) {
        guard size <= limit else { throw .frameTooLarge(size: size, limit: limit) }
        writer.append(to: &out)
    }
}
