import NIOCore

extension MDNSBrowser {
    /// The browser's query schedule and windows; the defaults follow RFC 6762.
    public struct Timing: Sendable {
        /// Between the first query and the second; the interval then doubles (§5.2: at least
        /// one second, then at least doubling).
        public var initialQueryInterval: TimeAmount = .seconds(1)
        /// The longest interval between queries (§5.2: may be capped at 60 minutes).
        public var maximumQueryInterval: TimeAmount = .minutes(60)
        /// The soonest ``Event/enumerationCompleted`` is sent after the first query: responders
        /// wait at most 120 ms before answering (§6), so by 250 ms every answer on a LAN is in.
        public var enumerationMinimum: TimeAmount = .milliseconds(250)
        /// After the minimum, enumeration completes once nothing has arrived for this long and
        /// every instance seen is fully resolved...
        public var enumerationQuietPeriod: TimeAmount = .milliseconds(100)
        /// ...or at the latest this long after the first query.
        public var enumerationMaximum: TimeAmount = .seconds(1)
        /// How long the one-shot query sent at the start (RFC 6762 §5.1) listens for unicast
        /// replies before its socket closes; zero sends none. Responders answer it at once
        /// (§6.7), while their multicast answer to the first query may be up to a second late
        /// when they multicast the records shortly before (§6).
        public var legacyQueryWindow: TimeAmount = .seconds(1)
        /// How long after learning of an instance a query for what its answer left out (SRV,
        /// TXT, addresses) goes out: answers usually carry it all, sometimes in a second packet.
        public var resolveDelay: TimeAmount = .milliseconds(20)
        /// Between resolve queries for one instance; it doubles after each, up to a minute.
        public var resolveRetryInterval: TimeAmount = .seconds(1)
        /// The most records cached, so a flood cannot use up memory: each at most the
        /// 9,000-byte datagram it came in (Baton's take a few hundred bytes), TTLs cut to 75
        /// minutes. When full, a newcomer takes the place of a record of the sender holding the
        /// most.
        public var cacheCapacity = 4096
        /// The most records one sender address may have cached: a quarter of the capacity by
        /// default (a host advertising some 170 instances). A sender that goes over is flooding:
        /// its records are dropped and it is not heard for ``floodPenalty`` (logged once).
        public var cacheQuotaPerSender: Int?
        /// The most records of the service type browsed (PTR, SRV, TXT): three quarters of the
        /// capacity by default, so hosts' addresses always have room.
        public var cacheQuotaPerServiceType: Int?
        /// How long a sender caught flooding the cache is not heard.
        public var floodPenalty: TimeAmount = .seconds(60)

        /// RFC 6762's values.
        public init() {}
    }
}
