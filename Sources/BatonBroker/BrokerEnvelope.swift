import BatonSecurity
import NIOCore

/// One MQTT message of Baton's broker link, as its payload carries it:
///
/// ```
/// version (1) ‖ type (1) ‖ session id (16) ‖ sender id length (1) ‖ sender id (UTF-8) ‖ body
/// ```
///
/// The session id and sender say which link a message is for; they are hints for routing,
/// checked by the sealed layer (a hello's own fields, the AEAD's associated data for the rest),
/// never trusted on their own. The body is a ``SealInitiator``'s hello, a responder's reply, or
/// a ``SealedSession``'s sealed bytes.
struct BrokerEnvelope: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        /// The initiator's signed hello (its inbox in the MQTT response topic).
        case hello = 1
        /// The responder's signed reply.
        case reply = 2
        /// Sealed frames, or a sealed close.
        case sealed = 3
        /// The responder did not let the initiator in: why, in words (unauthenticated: anyone
        /// could send one, so it only ever ends a link still waiting for its reply).
        case refusal = 4
    }

    static let version: UInt8 = 1
    static let sessionIDSize = 16
    /// Device ids are UUIDs; anything much longer is not one.
    static let maxSenderSize = 64

    var kind: Kind
    var sessionID: [UInt8]
    var sender: String
    var body: ByteBuffer

    /// The session id in hex, for keys and logs.
    var sessionKey: String { sessionID.hexDigits }

    /// The payload bytes.
    func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 19 + sender.utf8.count + body.readableBytes)
        buffer.writeInteger(Self.version)
        buffer.writeInteger(kind.rawValue)
        buffer.writeBytes(sessionID)
        buffer.writeInteger(UInt8(sender.utf8.count))
        buffer.writeString(sender)
        var body = body
        buffer.writeBuffer(&body)
        return buffer
    }

    /// Reads a payload; nil for anything that is not one (another version, a bad length, a
    /// sender id that is not a short lower-case UUID-like string).
    init?(_ payload: ByteBuffer) {
        var payload = payload
        guard payload.readInteger(as: UInt8.self) == Self.version,
              let kind = payload.readInteger(as: UInt8.self).flatMap(Kind.init(rawValue:)),
              let sessionID = payload.readBytes(length: Self.sessionIDSize),
              let length = payload.readInteger(as: UInt8.self), length > 0, Int(length) <= Self.maxSenderSize,
              let sender = payload.readString(length: Int(length)),
              sender.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x2d })
        else { return nil }
        self.init(kind: kind, sessionID: sessionID, sender: sender, body: payload)
    }

    init(kind: Kind, sessionID: [UInt8], sender: String, body: ByteBuffer) {
        self.kind = kind
        self.sessionID = sessionID
        self.sender = sender.lowercased()
        self.body = body
    }
}
