import NIOCore

/// A DNS message that arrived on port 5353, or as a reply to a one-shot query on that query's
/// port, and parsed, with where it came from.
package struct MDNSReceivedMessage: Sendable {
    /// The message.
    package var message: DNSMessage
    /// The sender's address and port; a port other than 5353 marks a legacy unicast querier
    /// (RFC 6762 §6.7), and responses from such ports are to be ignored (§6).
    package var source: SocketAddress
    /// The interface it arrived on, when the system said (it always does on Linux).
    package var interfaceIndex: Int?
    /// The family it arrived over.
    package var family: MDNSAddressFamily
    /// Whether it was sent to the mDNS group rather than to one of our addresses.
    package var wasMulticast: Bool

    package init(
        message: DNSMessage, source: SocketAddress, interfaceIndex: Int?, family: MDNSAddressFamily,
        wasMulticast: Bool = true
    ) {
        self.message = message
        self.source = source
        self.interfaceIndex = interfaceIndex
        self.family = family
        self.wasMulticast = wasMulticast
    }

    /// The sender's UDP port, 0 if the address has none.
    package var sourcePort: Int { source.port ?? 0 }
}
