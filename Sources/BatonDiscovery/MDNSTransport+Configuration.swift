import NIOCore

extension MDNSTransport {
    /// How the transport binds, which interfaces it uses, and how often it looks for changes.
    public struct Configuration: Sendable {
        /// The UDP port, 5353 for mDNS (RFC 6762 §3); other values are for experiments only, as
        /// nobody else listens there.
        public var port: Int = 5353
        /// Whether to try IPv6 as well. When the IPv6 socket cannot be bound (no IPv6 in this
        /// namespace or kernel), the transport carries on with IPv4 and logs why.
        public var ipv6Enabled = true
        /// How often to look at the interfaces again, joining new ones and leaving gone ones.
        public var interfaceRescanInterval: TimeAmount = .seconds(5)
        /// Keeps only the interfaces whose name this accepts; nil keeps every up,
        /// multicast-capable interface with an address.
        public var interfaceFilter: (@Sendable (String) -> Bool)?

        /// The defaults: port 5353, IPv4 and IPv6, every interface, rescanned every 5 seconds.
        public init() {}
    }
}
