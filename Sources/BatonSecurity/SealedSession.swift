import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One side of a sealed session, after the handshake: seals what it sends and opens what it
/// receives, as ``SealHandshake`` describes. A value: keep one per session and mutate it in
/// place (the counters and the replay window are in it).
public struct SealedSession: Sendable {
    /// The session's id: 16 random bytes the initiator chose.
    public let id: [UInt8]
    /// This device's id, lower case.
    public let localDeviceID: String
    /// The peer's id, lower case, as its hello or reply named it (and its certificate, where it
    /// names one).
    public let peerDeviceID: String

    /// Kept as bytes: swift-crypto's keys are not `Sendable`.
    private let sendKey: [UInt8]
    private let receiveKey: [UInt8]
    private let sendDirection: UInt32
    private let receiveDirection: UInt32
    private let sendPrefix: [UInt8]
    private let receivePrefix: [UInt8]
    private var nextCounter: UInt64 = 0
    private var window = SealReplayWindow()

    static let headerSize = 14
    static let tagSize = 16

    init(id: [UInt8], localDeviceID: String, peerDeviceID: String, keys: (i2r: [UInt8], r2i: [UInt8]), isInitiator: Bool) {
        self.id = id
        self.localDeviceID = localDeviceID
        self.peerDeviceID = peerDeviceID
        sendKey = isInitiator ? keys.i2r : keys.r2i
        receiveKey = isInitiator ? keys.r2i : keys.i2r
        sendDirection = isInitiator ? 1 : 2
        receiveDirection = isInitiator ? 2 : 1
        // Associated data begins with who sends to whom: fixed per direction, so made once.
        sendPrefix = Self.prefix(id, from: localDeviceID, to: peerDeviceID)
        receivePrefix = Self.prefix(id, from: peerDeviceID, to: localDeviceID)
    }

    /// `plaintext` sealed as the next message of this side, of kind `kind` (at most
    /// ``SealHandshake/maximumMessageKind``: the kinds above are the handshake's), refused by
    /// the peer after `expiry` (unix seconds).
    public mutating func seal(_ plaintext: some Collection<UInt8>, kind: UInt8, expiry: UInt32) -> [UInt8] {
        precondition(kind <= SealHandshake.maximumMessageKind, "sealed message kinds 0xF0 and above are the handshake's")
        precondition(nextCounter < .max, "a sealed session's counter ran out")
        let counter = nextCounter
        nextCounter += 1
        var header: [UInt8] = [SealHandshake.version, kind]
        header.append(bigEndian: counter)
        header.append(bigEndian: expiry)
        // Sealing with a 32-byte key and a 12-byte nonce cannot fail.
        let box = try! ChaChaPoly.seal(Array(plaintext), using: SymmetricKey(data: sendKey),
                                       nonce: Self.nonce(sendDirection, counter), authenticating: sendPrefix + header)
        var out = header
        out.reserveCapacity(header.count + box.ciphertext.count + Self.tagSize)
        out += box.ciphertext
        out += box.tag
        return out
    }

    /// The message in `sealed`, if it is the peer's, in this session, unexpired at `now` and not
    /// opened before. Throws ``SealError/malformed(_:)`` for bytes too short to be one or of
    /// another version, ``SealError/forged`` when it does not authenticate (tampered, or sealed
    /// in another session or by another device), ``SealError/expired``, or
    /// ``SealError/replayed(_:)``; a refused message changes nothing.
    public mutating func open(_ sealed: some Collection<UInt8>, now: Date = Date()) throws(SealError) -> SealedMessage {
        let bytes = Array(sealed)
        guard bytes.count >= Self.headerSize + Self.tagSize else { throw .malformed("\(bytes.count) bytes, shorter than any message") }
        guard bytes[0] == SealHandshake.version else { throw .malformed("version \(bytes[0]), not \(SealHandshake.version)") }
        var reader = SealReader(bytes)
        _ = reader.take(2)
        guard let counter = reader.integer(UInt64.self), let expiry = reader.integer(UInt32.self) else { throw .malformed("truncated") }
        let header = bytes[..<Self.headerSize]
        let ciphertext = bytes[Self.headerSize..<(bytes.count - Self.tagSize)]
        let tag = bytes[(bytes.count - Self.tagSize)...]
        guard let box = try? ChaChaPoly.SealedBox(nonce: Self.nonce(receiveDirection, counter), ciphertext: ciphertext, tag: tag),
              let plaintext = try? ChaChaPoly.open(box, using: SymmetricKey(data: receiveKey), authenticating: receivePrefix + header) else {
            throw .forged
        }
        guard Double(expiry) >= now.timeIntervalSince1970.rounded(.down) else { throw .expired }
        guard window.isNew(counter) else { throw .replayed(counter) }
        window.accept(counter)
        return SealedMessage(kind: bytes[1], counter: counter, plaintext: Array(plaintext))
    }

    private static func nonce(_ direction: UInt32, _ counter: UInt64) -> ChaChaPoly.Nonce {
        var bytes: [UInt8] = []
        bytes.append(bigEndian: direction)
        bytes.append(bigEndian: counter)
        return try! ChaChaPoly.Nonce(data: bytes)
    }

    private static func prefix(_ id: [UInt8], from sender: String, to receiver: String) -> [UInt8] {
        var out = id
        out.append(short: Array(sender.utf8))
        out.append(short: Array(receiver.utf8))
        return out
    }
}
