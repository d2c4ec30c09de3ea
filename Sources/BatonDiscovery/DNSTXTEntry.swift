/// One DNS-SD attribute of a TXT record (RFC 6763 §6.3–6.5): a key with a value, with an empty
/// value (`key=`), or with none (`key`, a boolean that is true by being present).
///
/// Build TXT data with ``DNSRecordData/txt(entries:)``; read it with
/// ``DNSRecordData/txtEntries``.
public struct DNSTXTEntry: Sendable, Hashable, CustomStringConvertible {
    /// The key: one or more printable US-ASCII characters other than `=`. Readers compare keys
    /// ignoring case (RFC 6763 §6.4); this keeps the case it was given.
    public let key: String
    /// The value's bytes, opaque binary data (often UTF-8 text); nil for a boolean key.
    public let value: [UInt8]?

    /// An entry with `value` (nil for a boolean); nil if the key is empty, has a character outside
    /// printable ASCII or an `=`, or if `key=value` would be over 255 bytes.
    public init?(key: String, value: [UInt8]?) {
        guard !key.isEmpty, key.utf8.allSatisfy({ (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "=") }),
              key.utf8.count + (value.map { 1 + $0.count } ?? 0) <= 255 else { return nil }
        self.key = key
        self.value = value
    }

    /// An entry whose value is `text` in UTF-8; nil as for ``init(key:value:)``.
    public init?(key: String, text: String) {
        self.init(key: key, value: Array(text.utf8))
    }

    /// A boolean entry: `key` with no `=`; nil as for ``init(key:value:)``.
    public init?(key: String) {
        self.init(key: key, value: nil)
    }

    /// Reads one TXT string; nil if it holds no usable entry (empty, or an empty or non-printable
    /// key, which RFC 6763 §6.4 says to ignore).
    init?(encoded string: [UInt8]) {
        let equals = string.firstIndex(of: UInt8(ascii: "="))
        let keyBytes = string[..<(equals ?? string.endIndex)]
        guard !keyBytes.isEmpty, keyBytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        key = String(decoding: keyBytes, as: UTF8.self)
        value = equals.map { Array(string[($0 + 1)...]) }
    }

    /// The value as UTF-8 text (invalid bytes become U+FFFD); nil for a boolean key.
    public var text: String? {
        value.map { String(decoding: $0, as: UTF8.self) }
    }

    /// The TXT string: `key=value`, or `key`.
    var encoded: [UInt8] {
        var bytes = Array(key.utf8)
        if let value {
            bytes.reserveCapacity(bytes.count + 1 + value.count)
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: value)
        }
        return bytes
    }

    /// `key` folded for case-insensitive comparison; keys are ASCII, so folding ASCII is enough.
    static func foldedKey(_ key: String) -> String {
        String(decoding: key.utf8.map(DNSName.foldCase), as: UTF8.self)
    }

    /// `key=value` (the value as text), or `key`.
    public var description: String {
        text.map { "\(key)=\($0)" } ?? key
    }
}
