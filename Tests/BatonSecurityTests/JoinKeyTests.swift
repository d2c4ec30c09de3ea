import BatonSecurity
import Crypto
import Testing
import X509

/// `JoinRequest.public_key`: DER SubjectPublicKeyInfo as the protocol says, and the bare point
/// older Baton clients sent.
@Suite("The key a joining device sends")
struct JoinKeyTests {
    @Test("Baton sends DER SubjectPublicKeyInfo, as the protocol says, and reads it back")
    func sendsSubjectPublicKeyInfo() throws {
        let p256 = P256.Signing.PrivateKey().publicKey
        let key = Certificate.PublicKey(p256)
        let encoded = try JoinKey.encode(key)
        // What any other X.509 library writes for the key (91 bytes for P-256).
        #expect(encoded == Array(p256.derRepresentation))
        #expect(encoded.count == 91)
        #expect(JoinKey.decode(encoded) == key)
    }

    @Test("the bare 65-byte point older Baton clients send is still read")
    func readsTheBarePoint() throws {
        let p256 = P256.Signing.PrivateKey().publicKey
        let point = Array(p256.x963Representation)
        #expect(point.count == 65)
        #expect(JoinKey.decode(point) == Certificate.PublicKey(p256))
    }

    @Test("anything but a P-256 key is refused")
    func refusesOtherKeys() throws {
        let p256 = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        let refused: [(String, [UInt8])] = [
            ("empty", []),
            ("garbage", Array("not a key at all".utf8)),
            ("a P-384 key", Array(P384.Signing.PrivateKey().publicKey.derRepresentation)),
            ("an Ed25519 key", try JoinKey.encode(Certificate.PublicKey(Curve25519.Signing.PrivateKey().publicKey))),
            ("a compressed point", Array(P256.Signing.PrivateKey().publicKey.compressedRepresentation)),
            ("65 bytes that are not a point", [0x04] + [UInt8](repeating: 0xff, count: 64)),
            ("SPKI with a byte after it", p256 + [0]),
            ("SPKI cut short", Array(p256.dropLast())),
        ]
        for (what, bytes) in refused {
            #expect(JoinKey.decode(bytes) == nil, "\(what) was taken for a key")
        }
    }
}
