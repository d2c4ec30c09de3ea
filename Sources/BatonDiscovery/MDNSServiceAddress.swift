import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An address of a discovered service's host, and the interface it was learned on.
public struct MDNSServiceAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv4 or IPv6.
    public var family: MDNSAddressFamily
    /// The address, 4 or 16 bytes in network order.
    public var bytes: [UInt8]
    /// The interface the A or AAAA record arrived on; a link-local IPv6 address is only
    /// reachable through it.
    public var interfaceIndex: Int

    /// An address of `bytes` (4 for IPv4, 16 for IPv6) learned on `interfaceIndex`.
    public init(bytes: [UInt8], interfaceIndex: Int) {
        self.family = bytes.count == 4 ? .ipv4 : .ipv6
        self.bytes = bytes
        self.interfaceIndex = interfaceIndex
    }

    /// Whether this is a link-local address (169.254/16, fe80::/10), usable only on its
    /// interface.
    public var isLinkLocal: Bool {
        switch family {
        case .ipv4: bytes.count == 4 && bytes[0] == 169 && bytes[1] == 254
        case .ipv6: bytes.count == 16 && bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80
        }
    }

    /// The address with `port`, ready to connect to: link-local IPv6 ones carry their
    /// interface as the scope.
    public func socketAddress(port: Int) -> SocketAddress {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: bytes.prefix(4)) }
            return SocketAddress(address, host: addressText)
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes.prefix(16)) }
            if isLinkLocal { address.sin6_scope_id = UInt32(truncatingIfNeeded: interfaceIndex) }
            return SocketAddress(address, host: addressText)
        }
    }

    /// The address in text: `192.168.1.20`, or IPv6 in RFC 5952 form.
    public var addressText: String {
        switch family {
        case .ipv4:
            return bytes.map(String.init).joined(separator: ".")
        case .ipv6:
            var groups: [UInt16] = []
            for i in stride(from: 0, to: bytes.count - 1, by: 2) {
                groups.append(UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
            }
            // The longest run of two or more zero groups becomes "::" (RFC 5952 §4.2).
            var best = (start: -1, length: 0)
            var run = (start: -1, length: 0)
            for (i, group) in groups.enumerated() {
                if group == 0 {
                    run = run.start < 0 ? (i, 1) : (run.start, run.length + 1)
                    if run.length > best.length { best = run }
                } else {
                    run = (-1, 0)
                }
            }
            let hex = groups.map { String($0, radix: 16) }
            guard best.length >= 2 else { return hex.joined(separator: ":") }
            let head = hex[..<best.start].joined(separator: ":")
            let tail = hex[(best.start + best.length)...].joined(separator: ":")
            return head + "::" + tail
        }
    }

    /// The address, with `%` and the interface index for a link-local IPv6 one.
    public var description: String {
        family == .ipv6 && isLinkLocal ? "\(addressText)%\(interfaceIndex)" : addressText
    }
}
