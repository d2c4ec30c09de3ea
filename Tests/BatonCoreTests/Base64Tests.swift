import BatonCore
import Testing

@Suite("Base64")
struct Base64Tests {
    // RFC 4648 §10 test vectors.
    static let vectors = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: vectors)
    func encodes(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.encode(plain.utf8) == encoded)
    }

    @Test(arguments: vectors)
    func decodes(_ plain: String, _ encoded: String) {
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func fullAlphabet() {
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
        #expect(Base64.encode([0x00, 0x10, 0x83, 0x10, 0x51, 0x87]) == "ABCDEFGH")
        #expect(Base64.decode("+/8=") == [0xFB, 0xFF])
        let all = (0...255).map { UInt8($0) }
        let encoded = Base64.encode(all)
        #expect(encoded.count == 344)
        #expect(encoded.hasPrefix("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BB"))
        #expect(encoded.hasSuffix("8/T19vf4+fr7/P3+/w=="))
        #expect(Base64.decode(encoded) == all)
    }

    @Test func roundTripsEveryLength() {
        for length in 0..<64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let encoded = Base64.encode(bytes)
            #expect(encoded.count == (length + 2) / 3 * 4)
            #expect(Base64.decode(encoded) == bytes)
        }
    }

    @Test func encodesAnyCollection() {
        let bytes: [UInt8] = [1, 2, 3, 4]
        #expect(Base64.encode(bytes[1...]) == "AgME")
        #expect(Base64.encode(bytes.lazy.map { $0 &+ 1 }) == "AgMEBQ==")
        #expect(Base64.encode(EmptyCollection<UInt8>()) == "")
    }

    // Foundation's decoder; it forgives some extra padding, and refuses what is not base64.
    @Test(arguments: [
        "Zg=", "Z", "Z===", "Zm9vY", "Zm9v\n", " Zg==", "Zg== ", "Zg==Zg==", "Z=g=", "=", "==", "===",
        "Zm9", "Zm-v", "Zm_v", "Zm9v!", "ＡＡＡＡ", "Zg",
    ])
    func rejects(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
