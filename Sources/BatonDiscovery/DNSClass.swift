/// A resource record CLASS (RFC 1035 §3.2.4), also used as a question's QCLASS.
///
/// Only the low 15 bits: in mDNS the top bit of the class field is a flag, the cache-flush bit of
/// an answer (RFC 6762 §10.2) or the unicast-response bit of a question (RFC 6762 §5.4), and is
/// kept apart in ``DNSResourceRecord/cacheFlush`` and ``DNSQuestion/unicastResponse``.
public struct DNSClass: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The class value, 0 ... 0x7FFF.
    public var rawValue: UInt16

    /// The class with value `rawValue`; the top bit, which belongs to the mDNS flag, is dropped.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue & 0x7FFF
    }

    /// The Internet, the only class mDNS uses.
    public static let internet = DNSClass(rawValue: 1)
    /// In a question only: every class (RFC 1035 QCLASS `*`).
    public static let any = DNSClass(rawValue: 255)

    /// `IN`, `ANY`, or `CLASS<n>` (RFC 3597 §5).
    public var description: String {
        switch self {
        case .internet: "IN"
        case .any: "ANY"
        default: "CLASS\(rawValue)"
        }
    }
}
