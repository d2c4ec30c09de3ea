extension DNSName {
    /// Baton's DNS-SD service type, `_baton._tcp.local.`.
    public static let batonService: DNSName = "_baton._tcp.local."
    /// The DNS-SD service type enumeration name, `_services._dns-sd._udp.local.` (RFC 6763 §9):
    /// its PTR records point at every service type advertised on the link.
    public static let serviceTypeEnumeration: DNSName = "_services._dns-sd._udp.local."
    /// The `local.` domain mDNS answers for (RFC 6762 §3).
    public static let local: DNSName = "local."
}
