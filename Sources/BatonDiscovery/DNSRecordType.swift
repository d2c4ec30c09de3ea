/// A resource record TYPE (RFC 1035 §3.2.2), also used as a question's QTYPE.
///
/// A struct rather than an enum so that types this codec does not know keep their raw value: a
/// record of an unknown type parses, and serializes back, unchanged.
public struct DNSRecordType: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 16-bit value on the wire.
    public var rawValue: UInt16

    /// The type with wire value `rawValue`, known or not.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// An IPv4 host address (RFC 1035).
    public static let a = DNSRecordType(rawValue: 1)
    /// A domain name pointer; in DNS-SD, service type → service instance (RFC 1035, RFC 6763 §4.1).
    public static let ptr = DNSRecordType(rawValue: 12)
    /// Text strings; in DNS-SD, the instance's `key=value` attributes (RFC 1035, RFC 6763 §6).
    public static let txt = DNSRecordType(rawValue: 16)
    /// An IPv6 host address (RFC 3596).
    public static let aaaa = DNSRecordType(rawValue: 28)
    /// Where a service runs: target host and port (RFC 2782).
    public static let srv = DNSRecordType(rawValue: 33)
    /// Which types exist for a name; mDNS uses it for negative answers (RFC 4034 §4, RFC 6762 §6.1).
    public static let nsec = DNSRecordType(rawValue: 47)
    /// In a question only: every type (RFC 1035 QTYPE `*`).
    public static let any = DNSRecordType(rawValue: 255)

    /// Orders by wire value.
    public static func < (lhs: DNSRecordType, rhs: DNSRecordType) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The mnemonic (`A`, `PTR`, …), or `TYPE<n>` (RFC 3597 §5) for types without one here.
    public var description: String {
        switch self {
        case .a: "A"
        case .ptr: "PTR"
        case .txt: "TXT"
        case .aaaa: "AAAA"
        case .srv: "SRV"
        case .nsec: "NSEC"
        case .any: "ANY"
        default: "TYPE\(rawValue)"
        }
    }
}
