/// Why a packet is not a DNS message we can read. Packets come from anyone on the network: the
/// caller drops the packet (perhaps logging this) and carries on.
///
/// Bytes after the last record are not an error: mDNS packets may carry padding, and they are
/// ignored.
public enum DNSParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The packet ends inside the header, a name, a question or a record's fixed fields, or a
    /// record's rdata length runs past the end.
    case truncated
    /// A label length byte starts with the bits 01 or 10, which RFC 1035 reserves (01 was briefly
    /// extended labels, which RFC 6891 retired).
    case badLabelLength
    /// A compression pointer points back into the name it is part of (itself included), so
    /// following it would go round forever.
    case pointerLoop
    /// A compression pointer points forward, to bytes not yet read. Compression can only refer to
    /// a name already written, so each pointer must point strictly before the start of the name,
    /// or of the last pointer's target; a loop between names always needs such a pointer.
    case pointerForward
    /// One name follows more than ``DNSMessage/maxPointerJumps`` compression pointers: no encoder
    /// needs that many, and following them all is work an attacker chose for us.
    case tooManyPointers
    /// A name is over 255 bytes once decompressed (RFC 1035 §3.1).
    case nameTooLong
    /// The header's section counts ask for more questions and records than the packet could hold
    /// (a question takes at least 5 bytes, a record 11); found before allocating anything.
    case absurdCount
    /// A record's rdata does not fit its type: wrong length for A, AAAA or SRV, a TXT string
    /// running past the rdata, a name not ending exactly where the rdata does, a bad NSEC bitmap.
    case badRData(DNSRecordType)

    public var description: String {
        switch self {
        case .truncated: "DNS message truncated"
        case .badLabelLength: "DNS name has a label length byte with reserved bits 01 or 10"
        case .pointerLoop: "DNS name compression pointer loops back into its own name"
        case .pointerForward: "DNS name compression pointer points forward"
        case .tooManyPointers: "DNS name follows too many compression pointers"
        case .nameTooLong: "DNS name longer than 255 bytes"
        case .absurdCount: "DNS header counts more entries than the packet could hold"
        case .badRData(let type): "malformed \(type) record data"
        }
    }
}
