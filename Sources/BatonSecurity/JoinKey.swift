import Crypto
import SwiftASN1
import X509

/// The joining device's public key as `JoinRequest.public_key` carries it: DER
/// SubjectPublicKeyInfo (RFC 5280) of a P-256 key, what ``encode(_:)`` writes and every client
/// should send. Baton clients before this one sent the bare 65-byte uncompressed point (X9.63,
/// `04 || X || Y`) instead; ``decode(_:)`` still takes it.
public enum JoinKey {
    /// `key` as DER SubjectPublicKeyInfo. Throws if it cannot be serialized.
    public static func encode(_ key: Certificate.PublicKey) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(key)
        return serializer.serializedBytes
    }

    /// The P-256 key in `bytes`: DER SubjectPublicKeyInfo, or the bare 65-byte uncompressed
    /// point older Baton clients send. Nil for anything else (another curve or algorithm, a
    /// point not on the curve, trailing bytes, garbage).
    public static func decode(_ bytes: [UInt8]) -> Certificate.PublicKey? {
        if bytes.count == 65, bytes.first == 0x04 {
            return (try? P256.Signing.PublicKey(x963Representation: bytes)).map(Certificate.PublicKey.init)
        }
        guard let key = try? Certificate.PublicKey(derEncoded: bytes), P256.Signing.PublicKey(key) != nil else { return nil }
        return key
    }
}
