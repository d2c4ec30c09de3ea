/// What ``FrameDecoder`` produces: a frame, or the news that one was too large to read.
public enum FrameEvent: Sendable, Equatable {
    /// A complete, parsed frame whose `body` is set.
    case frame(Baton_V1_Frame)
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
        var outer = WireScanner(prefix)
        guard let tag = outer.varint() else { return }
        let field = tag >> 3
        fieldNumber = field
        // The body must be a length-delimited message.
        guard tag & 7 == 2 else { return }
        let requestField: UInt64
        var channelField: UInt64? = nil
        switch field {
        case 3: kind = .describeRequest; requestField = 1
        case 5: kind = .launchRequest; requestField = 1
        case 7: kind = .openServiceRequest; requestField = 1; channelField = 2
        case 9: kind = .serviceRequest; requestField = 2; channelField = 1
        default: return
        }
        guard let bodyLength = outer.varint() else { return }
        var body = outer.remainder(upTo: bodyLength)
        let wholeBody = UInt64(body.count) == bodyLength

        var highestField: UInt64 = 0
        var clean = true
        scan: while !body.isAtEnd {
            guard let fieldTag = body.varint(), fieldTag >> 3 != 0 else {
                clean = false
                break
            }
            let number = fieldTag >> 3
            highestField = max(highestField, number)
            switch fieldTag & 7 {
            case 0:
                guard let value = body.varint() else {
                    clean = false
                    break scan
                }
                if number == requestField { requestID = value }
                if number == channelField { channelID = value }
            case 1:
                guard body.skip(8) else { clean = false; break scan }
            case 2:
                guard let n = body.varint(), body.skip(n) else { clean = false; break scan }
            case 5:
                guard body.skip(4) else { clean = false; break scan }
            default:
                clean = false
                break scan
            }
        }
        // proto3 omits zero: a later field (or the body's clean end) without the id means 0.
        if requestID == nil, highestField > requestField || (wholeBody && clean) { requestID = 0 }
        if let channelField, channelID == nil, highestField > channelField || (wholeBody && clean) {
            channelID = 0
        }
    }
}

/// Reads protobuf wire-format pieces from a few bytes, returning nil instead of failing.
struct WireScanner {
    private let bytes: UnsafeRawBufferPointer
    private var index: Int

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.index = 0
    }

    var isAtEnd: Bool { index >= bytes.count }
    var count: Int { bytes.count - index }

    mutating func varint() -> UInt64? {
        guard index < bytes.count else { return nil }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[index...])
        guard case .value(let value, let length) = Varint.peek(rest) else { return nil }
        index += length
        return value
    }

    /// Skips `n` bytes; false (skipping what there is) if fewer remain.
    mutating func skip(_ n: UInt64) -> Bool {
        guard n <= UInt64(count) else {
            index = bytes.count
            return false
        }
        index += Int(n)
        return true
    }

    /// A scanner over the next `n` bytes, or all that remain if fewer.
    func remainder(upTo n: UInt64) -> WireScanner {
        let end = n <= UInt64(count) ? index + Int(n) : bytes.count
        return WireScanner(UnsafeRawBufferPointer(rebasing: bytes[index..<end]))
    }
}
