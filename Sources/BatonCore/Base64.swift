#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Standard base64 (RFC 4648 §4, alphabet `A–Z a–z 0–9 + /`, `=` padding), as Foundation
/// writes and reads it: bytes in messages written as JSON, and signatures in revocation lists.
public enum Base64 {
    /// `bytes` in standard base64 with `=` padding; empty input gives `""`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }

    /// The bytes `s` encodes, or nil unless it is standard base64 with its padding: nothing
    /// else, no white space.
    public static func decode(_ s: String) -> [UInt8]? {
        Data(base64Encoded: s).map { [UInt8]($0) }
    }
}
