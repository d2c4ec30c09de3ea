#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fully qualified domain name: a sequence of labels, the root last and implicit (RFC 1035 §3.1).
///
/// Every value is valid: each label is 1 ... 63 bytes and the whole name, uncompressed on the wire,
/// is at most 255 bytes. Labels are bytes, not text: a DNS-SD instance label may hold spaces,
/// dots, parentheses and any UTF-8 (RFC 6763 §4.3), and one from the network may hold anything.
///
/// Equality and hashing ignore ASCII case, as DNS requires (RFC 1034 §3.1, RFC 6762 §16); bytes
/// outside `A`–`Z` compare exactly. The original case is kept for display and on the wire.
///
/// In text (``init(_:)`` and ``description``) labels are separated by `.`; inside a label `\.` is
/// a dot, `\\` a backslash and `\DDD` (three decimal digits) the byte DDD, as in RFC 1035 §5.1.
public struct DNSName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The most bytes in one label.
    public static let maxLabelLength = 63
    /// The most bytes in a whole name, uncompressed on the wire: length bytes, labels, and the
    /// root's zero byte.
    public static let maxWireLength = 255

    /// The uncompressed wire form without the root's final zero byte: each label preceded by its
    /// length. One flat array, so a name is one allocation and a suffix is a slice of it.
    let storage: [UInt8]

    /// The root name, `.`, with no labels.
    public static let root = DNSName(uncheckedStorage: [])

    /// `storage` must already be valid.
    init(uncheckedStorage storage: [UInt8]) {
        self.storage = storage
    }

    /// The name with `labels`, the top-level one last; nil if a label is empty or over 63 bytes,
    /// or the name would be over 255 bytes.
    public init?(labels: some Sequence<[UInt8]>) {
        var storage: [UInt8] = []
        for label in labels {
            guard !label.isEmpty, label.count <= Self.maxLabelLength,
                  storage.count + 1 + label.count < Self.maxWireLength else { return nil }
            storage.append(UInt8(label.count))
            storage.append(contentsOf: label)
        }
        self.storage = storage
    }

    /// The name with `labels`, each taken as UTF-8 exactly (no escapes); nil as for
    /// ``init(labels:)``.
    public init?(labels: some Sequence<String>) {
        self.init(labels: labels.lazy.map { Array($0.utf8) })
    }

    /// Parses dotted text such as `Living Room TV (2)._baton._tcp.local.`. The final dot is
    /// optional (every name is fully qualified); `""` and `"."` are the root.
    ///
    /// Returns nil for an empty label (`a..b`, `.a`), a label over 63 bytes, a name over 255
    /// bytes, a backslash at the end, or `\DDD` over 255.
    ///
    /// Called with a string literal, `DNSName("…")` is the literal initializer instead (SE-0213):
    /// not optional, and trapping if the literal is invalid.
    public init?(_ string: String) {
        if string.isEmpty || string == "." {
            self = .root
            return
        }
        var storage: [UInt8] = [0]
        storage.reserveCapacity(string.utf8.count + 1)
        var lengthIndex = 0  // where the current label's length byte is
        var utf8 = string.utf8.makeIterator()

        // Fills in the length byte of the label just read; false if it cannot be a label.
        func closeLabel() -> Bool {
            let length = storage.count - lengthIndex - 1
            guard length > 0, length <= Self.maxLabelLength else { return false }
            storage[lengthIndex] = UInt8(length)
            return true
        }

        var atLabelStart = true
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "."):
                guard closeLabel() else { return nil }
                lengthIndex = storage.count
                storage.append(0)
                atLabelStart = true
                continue
            case UInt8(ascii: "\\"):
                guard let escaped = utf8.next() else { return nil }
                if Self.isDigit(escaped) {
                    guard let d2 = utf8.next(), Self.isDigit(d2), let d3 = utf8.next(), Self.isDigit(d3) else {
                        return nil
                    }
                    let value = Int(escaped - 48) * 100 + Int(d2 - 48) * 10 + Int(d3 - 48)
                    guard value <= 255 else { return nil }
                    storage.append(UInt8(value))
                } else {
                    storage.append(escaped)
                }
            default:
                storage.append(byte)
            }
            atLabelStart = false
            // Checked as we go so a huge string fails early rather than after copying it all.
            guard storage.count < Self.maxWireLength else { return nil }
        }
        if atLabelStart {
            // Ended on a dot: drop the length byte of the label that never started.
            storage.removeLast()
        } else {
            guard closeLabel() else { return nil }
        }
        self.storage = storage
    }

    /// Parses a literal as ``init(_:)`` does, for constants such as `"_baton._tcp.local."`; an
    /// invalid literal is a programming error and traps.
    public init(stringLiteral value: String) {
        guard let name = DNSName(value) else { preconditionFailure("invalid DNS name literal \"\(value)\"") }
        self = name
    }

    /// Whether this is the root, `.`.
    public var isRoot: Bool { storage.isEmpty }

    /// How many labels there are (0 for the root).
    public var labelCount: Int {
        var count = 0
        var offset = 0
        while offset < storage.count {
            count += 1
            offset += 1 + Int(storage[offset])
        }
        return count
    }

    /// The labels, the top-level one last.
    public var labels: [[UInt8]] {
        var labels: [[UInt8]] = []
        var offset = 0
        while offset < storage.count {
            let length = Int(storage[offset])
            labels.append(Array(storage[offset + 1..<offset + 1 + length]))
            offset += 1 + length
        }
        return labels
    }

    /// The bytes of the first (leftmost) label: a DNS-SD instance name, a host name; nil for the root.
    public var firstLabelBytes: [UInt8]? {
        guard let length = storage.first else { return nil }
        return Array(storage[1..<1 + Int(length)])
    }

    /// The first label as text, unescaped (invalid UTF-8 becomes U+FFFD); nil for the root. For a
    /// DNS-SD instance this is the name to show a person, such as `Living Room TV (2)`.
    public var firstLabel: String? {
        guard let length = storage.first else { return nil }
        return String(decoding: storage[1..<1 + Int(length)], as: UTF8.self)
    }

    /// The name without its first label (`_baton._tcp.local.` for an instance of that service);
    /// nil for the root.
    public var parent: DNSName? {
        guard let length = storage.first else { return nil }
        return DNSName(uncheckedStorage: Array(storage[(1 + Int(length))...]))
    }

    /// The bytes this name takes on the wire uncompressed, root's zero byte included: 1 ... 255.
    public var wireLength: Int { storage.count + 1 }

    /// This name followed by `suffix` (`instance` + `_baton._tcp.local.`); nil if the result would
    /// be over 255 bytes.
    public func appending(_ suffix: DNSName) -> DNSName? {
        guard storage.count + suffix.storage.count < Self.maxWireLength else { return nil }
        return DNSName(uncheckedStorage: storage + suffix.storage)
    }

    /// `label` followed by this name; nil if the label is empty or over 63 bytes, or the result
    /// would be over 255 bytes.
    public func prepending(label: [UInt8]) -> DNSName? {
        guard !label.isEmpty, label.count <= Self.maxLabelLength,
              storage.count + 1 + label.count < Self.maxWireLength else { return nil }
        var newStorage: [UInt8] = []
        newStorage.reserveCapacity(storage.count + 1 + label.count)
        newStorage.append(UInt8(label.count))
        newStorage.append(contentsOf: label)
        newStorage.append(contentsOf: storage)
        return DNSName(uncheckedStorage: newStorage)
    }

    /// `label`, taken as UTF-8 exactly (a `.` in it stays inside the label), followed by this name:
    /// how a DNS-SD instance name is made from the name a person chose. Nil as for
    /// ``prepending(label:)``.
    public func prepending(label: String) -> DNSName? {
        prepending(label: Array(label.utf8))
    }

    /// Whether this name is `other` or lies under it, comparing whole labels case-insensitively:
    /// `tv._baton._tcp.local.` is a subdomain of `local.` and of itself, `xlocal.` is not of
    /// `local.`. Every name is a subdomain of the root.
    public func isSubdomain(of other: DNSName) -> Bool {
        let suffixLength = other.storage.count
        guard suffixLength <= storage.count else { return false }
        var offset = 0
        while storage.count - offset > suffixLength {
            offset += 1 + Int(storage[offset])
        }
        // Landing past the suffix's start means it does not begin on a label boundary here.
        guard storage.count - offset == suffixLength else { return false }
        return Self.equalIgnoringCase(storage[offset...], other.storage[...])
    }

    public static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        equalIgnoringCase(lhs.storage[...], rhs.storage[...])
    }

    public func hash(into hasher: inout Hasher) {
        // Eight folded bytes per combine: names are hashed on every cache lookup.
        var word: UInt64 = 0
        var filled = 0
        for byte in storage {
            word = word << 8 | UInt64(Self.foldCase(byte))
            filled += 1
            if filled == 8 {
                hasher.combine(word)
                word = 0
                filled = 0
            }
        }
        hasher.combine(word)
        hasher.combine(storage.count)
    }

    /// The dotted text with a final dot, escaped so ``init(_:)`` reads it back: `.` and `\` in a
    /// label as `\.` and `\\`; control characters, and every non-ASCII byte of a label that is not
    /// valid UTF-8, as `\DDD`. The root is `.`.
    public var description: String {
        if storage.isEmpty { return "." }
        var text = ""
        text.reserveCapacity(storage.count + 1)
        var offset = 0
        while offset < storage.count {
            let length = Int(storage[offset])
            Self.appendEscaped(storage[offset + 1..<offset + 1 + length], to: &text)
            text.append(".")
            offset += 1 + length
        }
        return text
    }

    // MARK: - Helpers

    /// `byte` with ASCII `A`–`Z` lowered; length bytes (≤ 63) are never letters, so whole
    /// storage arrays can be folded.
    @inline(__always)
    static func foldCase(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Whether `a` and `b` hold the same bytes but for ASCII case.
    static func equalIgnoringCase(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        // Names are compared on every cache lookup and most are spelled alike, so compare the
        // bytes whole first (memcmp), and fold case only when they differ.
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                guard let x = a.baseAddress, let y = b.baseAddress else { return true }
                if memcmp(x, y, a.count) == 0 { return true }
                var index = 0
                while index < a.count {
                    if foldCase(a[index]) != foldCase(b[index]) { return false }
                    index += 1
                }
                return true
            }
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Appends `label` in the escaped text form of ``description``.
    private static func appendEscaped(_ label: ArraySlice<UInt8>, to text: inout String) {
        func appendDecimalEscape(_ byte: UInt8) {
            text.append("\\")
            text.append(Character(Unicode.Scalar(48 + byte / 100)))
            text.append(Character(Unicode.Scalar(48 + byte / 10 % 10)))
            text.append(Character(Unicode.Scalar(48 + byte % 10)))
        }
        func appendASCII(_ byte: UInt8) {
            switch byte {
            case UInt8(ascii: "."): text.append("\\.")
            case UInt8(ascii: "\\"): text.append("\\\\")
            case 0x20..<0x7F: text.append(Character(Unicode.Scalar(byte)))
            default: appendDecimalEscape(byte)
            }
        }

        if isValidUTF8(label) {
            for scalar in String(decoding: label, as: UTF8.self).unicodeScalars {
                if scalar.isASCII {
                    appendASCII(UInt8(scalar.value))
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        } else {
            // Bytes, not text: keep printable ASCII readable and escape the rest, so the
            // description still reads back to the same name.
            for byte in label { appendASCII(byte) }
        }
    }

    private static func isValidUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
