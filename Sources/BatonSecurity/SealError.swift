/// Why a sealed handshake or message was refused. Never carries a key.
public enum SealError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not a message of this protocol: truncated, too long, an unknown version.
    case malformed(String)
    /// The peer proved who it is, and the account's trust rules say no (the same rules as the TLS
    /// handshake's): the reason, for the user.
    case refused(String)
    /// Authentication failed: a signature that does not verify, or a message whose tag does not
    /// (tampered, or sealed under other keys, another session's among them).
    case forged
    /// A message with this counter was already opened, or is older than the replay window.
    case replayed(UInt64)
    /// The message or hello is past its expiry.
    case expired
    /// A hello dated too far in the future for the clocks of two devices to disagree so much.
    case notYetValid
    /// A reply to another hello than the one this initiator sent.
    case wrongSession
    /// A hello or reply addressed to another device than this one.
    case wrongReceiver

    /// The reason, for people.
    public var description: String {
        switch self {
        case .malformed(let why): "malformed sealed message: \(why)"
        case .refused(let why): why
        case .forged: "a sealed message failed authentication (forged, tampered, or another session's)"
        case .replayed(let counter): "sealed message \(counter) was replayed or is too old"
        case .expired: "a sealed message arrived after its expiry"
        case .notYetValid: "a sealed hello is dated in the future (are the clocks right?)"
        case .wrongSession: "a sealed reply answers another hello"
        case .wrongReceiver: "a sealed message is addressed to another device"
        }
    }
}
