/// A one-time code that lets a new device join an account: 7 random bytes of secret and the first
/// 8 bytes of the account's fingerprint, written as 24 Crockford base32 characters in six groups
/// of four (`7K3Q-M2XD-…`). The secret is what the account's device checks; the fingerprint
/// prefix is what the new device pins the account's certificate to.
///
/// `description`, `debugDescription` and the mirror name the account only, so that a code put in
/// a log line by accident gives nothing away; ``text`` is the one way to spell it out.
public struct InviteCode: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret part (7 bytes): known only to the device that made the code and whoever it is
    /// shown to.
    public let secret: [UInt8]
    /// The first 8 bytes of the account's fingerprint.
    public let accountPrefix: [UInt8]

    static let secretLength = 7
    static let prefixLength = 8
    /// 15 bytes are 120 bits: exactly 24 characters of 5 bits.
    static let characterCount = 24
    /// Crockford's base32: no I, L, O or U, so that nothing reads as something else.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A fresh code for the account whose fingerprint is `fingerprint`, with a secret from the
    /// system's secure random source.
    public static func make(for fingerprint: AccountFingerprint) -> InviteCode {
        var random = SystemRandomNumberGenerator()
        let secret = (0..<secretLength).map { _ in UInt8.random(in: .min ... .max, using: &random) }
        return InviteCode(secret: secret, accountPrefix: Array(fingerprint.bytes.prefix(prefixLength)))
    }

    init(secret: [UInt8], accountPrefix: [UInt8]) {
        self.secret = secret
        self.accountPrefix = accountPrefix
    }

    /// Reads a code as a person may type it: any case, with or without spaces and dashes, `O`
    /// for `0` and `I` or `L` for `1`. Throws ``SecurityError/refused(_:)`` saying what is wrong
    /// (its length, or the first character that cannot be in a code) without repeating the code.
    public init(parsing text: String) throws {
        var values: [UInt8] = []
        values.reserveCapacity(Self.characterCount)
        for character in text.uppercased() where character != "-" && !character.isWhitespace {
            guard let value = Self.value(of: character) else {
                throw SecurityError.refused("not an invite code: \"\(character)\" cannot be part of one (they are letters and digits, without U)")
            }
            values.append(value)
        }
        guard values.count == Self.characterCount else {
            throw SecurityError.refused("not an invite code: it has \(values.count) letters and digits, not \(Self.characterCount)")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.secretLength + Self.prefixLength)
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        self.init(secret: Array(bytes.prefix(Self.secretLength)), accountPrefix: Array(bytes.dropFirst(Self.secretLength)))
    }

    /// The code for people: 24 upper-case characters in six dash-separated groups of four. It is
    /// a secret until used: show it to the user, never log it.
    public var text: String {
        var characters: [UInt8] = []
        characters.reserveCapacity(Self.characterCount + 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in secret + accountPrefix {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                if characters.count % 5 == 4 { characters.append(UInt8(ascii: "-")) }
                characters.append(Self.alphabet[Int(buffer >> UInt32(bits) & 31)])
            }
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// Whether the code was made for the account whose fingerprint is `fingerprint`.
    public func matches(_ fingerprint: AccountFingerprint) -> Bool {
        fingerprint.bytes.starts(with: accountPrefix) && accountPrefix.count == Self.prefixLength
    }

    /// `invite code for account 3f2a-91c0-77de-0b45`: the account, never the secret.
    public var description: String { "invite code for account \(accountShort)" }

    /// The same as ``description``: the secret stays out of debug output too.
    public var debugDescription: String { description }

    /// Shows the account prefix only, so `dump` does not print the secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["account": accountShort], displayStyle: .struct)
    }

    /// The account prefix as `AccountFingerprint.short` writes the same 8 bytes.
    var accountShort: String {
        let hex = Array(accountPrefix.hexDigits)
        return stride(from: 0, to: hex.count, by: 4).map { String(hex[$0..<min($0 + 4, hex.count)]) }.joined(separator: "-")
    }

    /// The 5-bit value of a (upper-case) code character, with Crockford's readings of O, I, L.
    private static func value(of character: Character) -> UInt8? {
        switch character {
        case "O": return 0
        case "I", "L": return 1
        default:
            guard let ascii = character.asciiValue, let index = alphabet.firstIndex(of: ascii) else { return nil }
            return UInt8(index)
        }
    }
}
