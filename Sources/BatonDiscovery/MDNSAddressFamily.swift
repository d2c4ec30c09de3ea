/// An IP version mDNS runs over: IPv4 (group 224.0.0.251) or IPv6 (group ff02::fb).
public enum MDNSAddressFamily: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// IPv4: A records, group 224.0.0.251.
    case ipv4
    /// IPv6: AAAA records, group ff02::fb.
    case ipv6

    /// `IPv4` or `IPv6`.
    public var description: String {
        switch self {
        case .ipv4: "IPv4"
        case .ipv6: "IPv6"
        }
    }
}
