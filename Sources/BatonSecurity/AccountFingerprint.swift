import Crypto
import X509
import SwiftASN1

/// An account's name on the wire: the SHA-256 of its CA certificate (DER). Discovery's TXT `acct`
/// carries it in hex; invite codes pin it.
public struct AccountFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 32 bytes of the digest.
    public let bytes: [UInt8]

    /// The fingerprint of `certificate`.
    public init(of certificate: Certificate) throws {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        bytes = Array(SHA256.hash(data: serializer.serializedBytes))
    }

    /// The fingerprint of the certificate whose DER encoding is `der`, as a peer sent it.
    init(der: [UInt8]) {
        bytes = Array(SHA256.hash(data: der))
    }

    /// The fingerprint whose lower-case hex is `hex` (64 digits); nil if it is not one.
    public init?(hex: String) {
        let digits = Array(hex.lowercased().utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let high = Self.nibble(digits[i]), let low = Self.nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// 64 lower-case hex digits.
    public var hex: String { bytes.hexDigits }

    /// The first 16 hex digits in groups of four (`3f2a-91c0-77de-0b45`), for people.
    public var short: String {
        let head = Array(hex.prefix(16))
        return stride(from: 0, to: 16, by: 4).map { String(head[$0..<$0 + 4]) }.joined(separator: "-")
    }

    /// The short form.
    public var description: String { short }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
