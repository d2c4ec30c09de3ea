/// What ``FrameDecoder`` produces: a frame, or the news that one was too large to read.
public enum FrameEvent: Sendable, Equatable {
    /// A complete, parsed frame.
    case frame(Frame)
    /// A frame over the receiver's ``FrameLimits/maxFrameSize``. Its payload is skipped, never
    /// buffered; this is what its first bytes showed. Answer the request it names (if any)
    /// with a "too large" status, or send Goodbye `REASON_FRAME_TOO_LARGE` and close.
    case oversized(OversizedFrame)
}

/// What the first bytes of an oversized frame show.
///
/// Serializers write fields in field-number order, so a request's ids come first in its body:
/// `request_id` is field 1 of DescribeRequest, LaunchRequest and OpenServiceRequest
/// (`channel_id` is field 2 of the latter); ServiceRequest has `channel_id` 1, `request_id` 2.
public struct OversizedFrame: Sendable, Hashable, CustomStringConvertible {
    /// The body kinds a receiver can answer without reading the whole frame.
    public enum Kind: Sendable, Hashable {
        case describeRequest
        case launchRequest
        case openServiceRequest
        case serviceRequest
        /// Anything else (a response, a Ping, an unknown field, bytes that are not protobuf):
        /// nothing to answer.
        case other
    }

    /// The body's kind.
    public var kind: Kind
    /// The request's id, when `kind` is a request and the first bytes show it. A proto3
    /// serializer omits a zero id, so a request whose body starts with a later field has id 0.
    public var requestID: UInt64?
    /// The channel's id for a ServiceRequest or OpenServiceRequest, when the first bytes show it.
    public var channelID: UInt64?
    /// The payload's length in bytes, from the length prefix.
    public var length: Int
    /// The `Frame` field number of the body (e.g. 12 for Ping), if the first bytes hold a tag;
    /// for logs.
    public var fieldNumber: UInt64?

    public init(
        kind: Kind, requestID: UInt64? = nil, channelID: UInt64? = nil, length: Int, fieldNumber: UInt64? = nil
    ) {
        self.kind = kind
        self.requestID = requestID
        self.channelID = channelID
        self.length = length
        self.fieldNumber = fieldNumber
    }

    /// For example `oversized launchRequest frame of 2097152 bytes (request 7)`.
    public var description: String {
        var text = "oversized \(kind) frame of \(length) bytes"
        var ids: [String] = []
        if let channelID { ids.append("channel \(channelID)") }
        if let requestID { ids.append("request \(requestID)") }
        if !ids.isEmpty { text += " (" + ids.joined(separator: ", ") + ")" }
        return text
    }

    /// How many payload bytes the decoder looks at.
    static let peekLength = 64

    /// The tolerant view of a frame of `length` bytes whose payload starts with `prefix`
    /// (at most ``peekLength`` bytes of it). Anything unreadable just leaves fields nil.
    init(length: Int, prefix: UnsafeRawBufferPointer) {
        self.init(kind: .other, length: length)
        var outer = ProtoReader(prefix)
        guard let tag = try? outer.varint() else { return }
        let field = tag >> 3
        fieldNumber = field
        // The body must be a length-delimited message.
        guard tag & 7 == 2 else { return }
        let requestField: Int
        var channelField: Int? = nil
        switch field {
        case 3: kind = .describeRequest; requestField = 1
        case 5: kind = .launchRequest; requestField = 1
        case 7: kind = .openServiceRequest; requestField = 1; channelField = 2
        case 9: kind = .serviceRequest; requestField = 2; channelField = 1
        default: return
        }
        guard let bodyLength = try? outer.varint() else { return }
        let rest = UnsafeRawBufferPointer(rebasing: prefix[(prefix.count - outer.remaining)...])
        let wholeBody = UInt64(rest.count) >= bodyLength
        var body = ProtoReader(UnsafeRawBufferPointer(rebasing: rest.prefix(Int(min(bodyLength, UInt64(rest.count))))))

        // Only the first bytes are here: read what they show, and stop where they end.
        var highestField = 0
        var clean = true
        while !body.isAtEnd {
            guard let f = try? body.nextField() else {
                clean = false
                break
            }
            highestField = max(highestField, f.number)
            if f.wireType == 0 {
                guard let value = try? body.varint() else {
                    clean = false
                    break
                }
                if f.number == requestField { requestID = value }
                if f.number == channelField { channelID = value }
            } else if (try? body.skip(f.wireType)) == nil {
                clean = false
                break
            }
        }
        // proto3 omits zero: a later field (or the body's clean end) without the id means 0.
        if requestID == nil, highestField > requestField || (wholeBody && clean) { requestID = 0 }
        if let channelField, channelID == nil, highestField > channelField || (wholeBody && clean) {
            channelID = 0
        }
    }
}
