extension MDNSTransport {
    /// Counters since the transport started.
    public struct Statistics: Sendable, Hashable {
        /// Datagrams received, malformed ones included.
        public var packetsReceived = 0
        /// Datagrams that were not a DNS message we can read (bad pointers, loops, truncation,
        /// absurd counts...): dropped, never acted on.
        public var malformedPackets = 0
        /// Datagrams handed to the system.
        public var packetsSent = 0
        /// Datagrams the system refused to send (an interface going away, no route...).
        public var sendFailures = 0

        /// All zero.
        public init() {}
    }
}
