import NIOCore

/// Where the transport sends a message.
package enum MDNSDestination: Sendable, Hashable, CustomStringConvertible {
    /// The mDNS group on the interface with this index, over `family` only, or over every
    /// family the interface has an address of when nil.
    case multicast(interfaceIndex: Int, family: MDNSAddressFamily?)
    /// One host, such as a querier that asked for a unicast reply (RFC 6762 §5.4, §6.7).
    case unicast(SocketAddress)

    package var description: String {
        switch self {
        case .multicast(let index, let family): "multicast on #\(index)" + (family.map { " \($0)" } ?? "")
        case .unicast(let address): "unicast to \(address)"
        }
    }
}
