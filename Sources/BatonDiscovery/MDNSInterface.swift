/// A network interface mDNS runs on: up, multicast-capable, and joined to the mDNS group for
/// each family it has an address of.
public struct MDNSInterface: Sendable, Hashable, CustomStringConvertible {
    /// The operating system's interface index (`if_nametoindex`), never 0.
    public var index: Int
    /// The interface's name, such as `eth0`.
    public var name: String
    /// Its IPv4 addresses, 4 bytes each in network order.
    public var ipv4Addresses: [[UInt8]]
    /// Its IPv6 addresses, 16 bytes each in network order, link-local ones included.
    public var ipv6Addresses: [[UInt8]]

    /// An interface with the given index, name and addresses.
    public init(index: Int, name: String, ipv4Addresses: [[UInt8]] = [], ipv6Addresses: [[UInt8]] = []) {
        self.index = index
        self.name = name
        self.ipv4Addresses = ipv4Addresses
        self.ipv6Addresses = ipv6Addresses
    }

    /// Whether the interface has an address of `family`, and so takes part in mDNS over it.
    public func hasAddress(of family: MDNSAddressFamily) -> Bool {
        switch family {
        case .ipv4: !ipv4Addresses.isEmpty
        case .ipv6: !ipv6Addresses.isEmpty
        }
    }

    /// `eth0#2 [192.168.1.20, fe80:…]`.
    public var description: String {
        let addresses = ipv4Addresses.map { DNSRecordData.a($0).description }
            + ipv6Addresses.map { DNSRecordData.aaaa($0).description }
        return "\(name)#\(index) [\(addresses.joined(separator: ", "))]"
    }
}
