import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Baton's sealed channel, for links whose transport ends somewhere untrusted (a broker): the
/// two devices prove themselves to each other in a signed handshake, under the same trust rules
/// as the TLS handshake, and then seal every message end to end. What follows is the whole
/// protocol (version 1); all integers are big-endian.
///
/// **Hello** (the dialling side, the *initiator*) and **reply** (the agent, the *responder*):
///
///     u8  version = 1
///     u8  kind: 0xF0 hello, 0xF1 reply
///     16  session id: random, chosen by the initiator (the reply repeats it)
///     u8 n, n bytes  sender device id (UTF-8, lower case, 1..64 bytes)
///     u8 n, n bytes  receiver device id
///     u64 timestamp: unix milliseconds when it was made
///     u32 expiry: unix seconds after which it is refused (the maker's timestamp + 60 s)
///     32  the sender's ephemeral X25519 public key, fresh for this handshake
///     32  (reply only) SHA-256 of the whole hello as received, signature included
///     u8  count (1..4), then count × (u16 n (1..8192), n bytes): the sender's chain, DER, leaf first
///     u8 n, n bytes  ECDSA P-256 with SHA-256, DER-encoded (X9.62), by the leaf's key, over
///                    label ‖ every byte above, from the version on;
///                    label "baton seal v1 hello" or "baton seal v1 reply"
///
/// Nothing may follow the signature. A receiver refuses one addressed to another device, one
/// past its expiry or more than 120 s after its timestamp, or dated more than 60 s ahead; then
/// one whose signature the leaf's key does not verify (what proves the key is held, as TLS's
/// CertificateVerify does); then judges the chain: the responder as the agent judges a TLS
/// caller (``PeerTrust/classifyCaller(chain:now:)``: another account's device or a self-signed
/// one is anonymous, a revoked one of ours refused), the initiator as a TLS client judges the
/// agent (``KnownDevices/expectation(for:claimed:)``, ``PeerTrust/verifyAgent(chain:deviceID:expecting:now:)``
/// for the device dialled, ``KnownDevices/check(_:)``). A certificate that names a device must
/// name the sender id. The initiator also refuses a reply whose session id or hello hash is not
/// its hello's.
///
/// **Keys**: the X25519 shared secret of the two ephemeral keys (an all-zero one is refused);
/// salt = SHA-256(hello ‖ reply); initiator→responder key = HKDF-SHA256(secret, salt,
/// info "baton seal v1 i2r", 32 bytes), responder→initiator with info "baton seal v1 r2i".
///
/// **Messages**, either way, with ChaCha20-Poly1305 under the sender's direction key:
///
///     header: u8 version = 1, u8 kind (0x00..0xEF), u64 counter, u32 expiry (unix seconds)
///     then the ciphertext, then the 16-byte tag
///     nonce = u32 direction (1 initiator→responder, 2 responder→initiator) ‖ u64 counter
///     associated data = session id ‖ u8 n, sender id ‖ u8 n, receiver id ‖ header
///
/// Each direction counts from 0, one more per message. A receiver authenticates first, then
/// refuses a message whose expiry is before now, then one whose counter is not newer than the
/// highest seen less 1024 or was seen already (a sliding window: out of order within it is
/// fine, once).
///
/// **A replayed hello is harmless**: within its short life it makes the agent answer again,
/// with a session keyed to the initiator's ephemeral key, whose private half only the initiator
/// had (and dropped once it finished); the replayer can neither read nor forge in it, and the
/// real initiator ignores a reply to a hello it is not waiting on. What it costs the agent is a
/// signature and a key agreement; ``SealSeenHellos`` lets a link skip the repeats.
public enum SealHandshake {
    /// The protocol version, first byte of everything sealed.
    public static let version: UInt8 = 1
    /// The kind byte of a hello.
    public static let helloKind: UInt8 = 0xF0
    /// The kind byte of a reply.
    public static let replyKind: UInt8 = 0xF1
    /// The highest kind a sealed message may have; above it the handshake's.
    public static let maximumMessageKind: UInt8 = 0xEF
    /// How long a hello or reply says it is good for.
    public static let lifetime: UInt32 = 60
    /// The oldest a hello or reply may be, whatever its expiry says.
    public static let maximumAge: TimeInterval = 120
    /// How far ahead a sender's clock may be.
    public static let clockSkew: TimeInterval = 60

    static let maximumChainLength = 4
    static let maximumCertificateSize = 8192
    static let maximumIDLength = 64

    static func isValidDeviceID(_ id: String) -> Bool {
        (1...maximumIDLength).contains(id.utf8.count)
    }

    /// A hello or reply, read or about to be written.
    struct Message {
        var kind: UInt8
        var sessionID: [UInt8]
        var sender: String
        var receiver: String
        var timestamp: UInt64
        var expiry: UInt32
        var ephemeralKey: [UInt8]
        var helloHash: [UInt8]?
        var chain: [[UInt8]]
        var signature: [UInt8] = []

        var label: String { kind == SealHandshake.helloKind ? "baton seal v1 hello" : "baton seal v1 reply" }

        /// Everything up to the signature.
        var body: [UInt8] {
            var out: [UInt8] = [SealHandshake.version, kind]
            out += sessionID
            out.append(short: Array(sender.utf8))
            out.append(short: Array(receiver.utf8))
            out.append(bigEndian: timestamp)
            out.append(bigEndian: expiry)
            out += ephemeralKey
            if let helloHash { out += helloHash }
            out.append(UInt8(chain.count))
            for certificate in chain {
                out.append(bigEndian: UInt16(certificate.count))
                out += certificate
            }
            return out
        }

        var signedBytes: [UInt8] { Array(label.utf8) + body }

        /// Signed with `key`, as bytes to send.
        mutating func signed(with key: Certificate.PrivateKey) -> [UInt8] {
            // A device key that cannot sign is a broken install, not a peer's doing.
            guard let signature = try? key.sign(bytes: signedBytes, signatureAlgorithm: .ecdsaWithSHA256) else {
                preconditionFailure("the device key cannot sign")
            }
            self.signature = signature.rawRepresentation
            var out = body
            out.append(short: self.signature)
            return out
        }

        /// The message in `bytes`, structurally checked; nothing about it is trusted yet.
        static func read(_ bytes: [UInt8]) throws(SealError) -> Message {
            var reader = SealReader(bytes)
            guard let version = reader.u8() else { throw .malformed("empty") }
            guard version == SealHandshake.version else { throw .malformed("version \(version), not \(SealHandshake.version)") }
            guard let kind = reader.u8(), kind == SealHandshake.helloKind || kind == SealHandshake.replyKind else {
                throw .malformed("not a hello or a reply")
            }
            guard let sessionID = reader.take(16), let sender = reader.deviceID(), let receiver = reader.deviceID(),
                  let timestamp = reader.integer(UInt64.self), let expiry = reader.integer(UInt32.self),
                  let ephemeralKey = reader.take(32) else { throw .malformed("truncated") }
            var helloHash: ArraySlice<UInt8>?
            if kind == SealHandshake.replyKind {
                guard let hash = reader.take(32) else { throw .malformed("truncated") }
                helloHash = hash
            }
            guard let count = reader.u8() else { throw .malformed("truncated") }
            guard (1...SealHandshake.maximumChainLength).contains(Int(count)) else { throw .malformed("a chain of \(count) certificates") }
            var chain: [[UInt8]] = []
            for _ in 0..<count {
                guard let length = reader.integer(UInt16.self), let certificate = reader.take(Int(length)) else { throw .malformed("truncated") }
                guard !certificate.isEmpty, certificate.count <= SealHandshake.maximumCertificateSize else {
                    throw .malformed("a certificate of \(certificate.count) bytes")
                }
                chain.append(Array(certificate))
            }
            guard let signature = reader.short(), !signature.isEmpty else { throw .malformed("truncated") }
            guard reader.isAtEnd else { throw .malformed("bytes after the signature") }
            return Message(kind: kind, sessionID: Array(sessionID), sender: sender, receiver: receiver, timestamp: timestamp,
                           expiry: expiry, ephemeralKey: Array(ephemeralKey), helloHash: helloHash.map(Array.init),
                           chain: chain, signature: Array(signature))
        }

        /// Refuses a message past its expiry or age, or from too far ahead.
        func checkFreshness(now: Date) throws(SealError) {
            let made = Double(timestamp) / 1000
            let seconds = now.timeIntervalSince1970
            guard made <= seconds + SealHandshake.clockSkew else { throw .notYetValid }
            guard seconds <= Double(expiry), seconds <= made + SealHandshake.maximumAge else { throw .expired }
        }

        /// Checks the signature with the leaf's P-256 key, and returns that key.
        func checkSignature() throws(SealError) -> Certificate.PublicKey {
            guard let leaf = try? Certificate(derEncoded: chain[0]) else { throw .malformed("the certificate cannot be read") }
            guard P256.Signing.PublicKey(leaf.publicKey) != nil else { throw .malformed("the certificate's key is not P-256") }
            guard leaf.publicKey.isValidSignature(signature, for: signedBytes, signatureAlgorithm: .ecdsaWithSHA256) else { throw .forged }
            return leaf.publicKey
        }
    }

    /// A new message from `credentials`, with a fresh ephemeral key (returned, private).
    static func make(kind: UInt8, sessionID: [UInt8], from credentials: SealCredentials, to receiver: String,
                     helloHash: [UInt8]?, now: Date) -> (message: Message, ephemeral: Curve25519.KeyAgreement.PrivateKey) {
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let seconds = max(0, now.timeIntervalSince1970)
        let message = Message(
            kind: kind, sessionID: sessionID, sender: credentials.deviceID, receiver: receiver.lowercased(),
            timestamp: UInt64(seconds * 1000), expiry: UInt32(clamping: Int(seconds) + Int(lifetime)),
            ephemeralKey: Array(ephemeral.publicKey.rawRepresentation), helloHash: helloHash, chain: credentials.chain)
        return (message, ephemeral)
    }

    /// The two direction keys, initiator→responder and responder→initiator.
    static func keys(_ ephemeral: Curve25519.KeyAgreement.PrivateKey, peerKey: [UInt8], hello: [UInt8], reply: [UInt8]) throws(SealError) -> (i2r: [UInt8], r2i: [UInt8]) {
        guard let peer = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerKey),
              let secret = try? ephemeral.sharedSecretFromKeyAgreement(with: peer) else {
            throw .malformed("an ephemeral key that agrees on nothing")
        }
        guard secret.withUnsafeBytes({ $0.contains { $0 != 0 } }) else { throw .malformed("an ephemeral key that agrees on nothing") }
        let salt = Array(SHA256.hash(data: hello + reply))
        func key(_ direction: String) -> [UInt8] {
            secret.hkdfDerivedSymmetricKey(using: SHA256.self, salt: salt, sharedInfo: Array("baton seal v1 \(direction)".utf8), outputByteCount: 32)
                .withUnsafeBytes { Array($0) }
        }
        return (key("i2r"), key("r2i"))
    }

    static func hash(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
