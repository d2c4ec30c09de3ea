import NIOCore

extension MDNSResponder {
    /// The responder's delays, counts and TTLs; the defaults are RFC 6762's.
    public struct Timing: Sendable {
        /// The random wait before the first probe (§8.1: 0–250 ms), so hosts powered on together
        /// do not probe in lockstep. Also used before probing again for a new name.
        public var probeDelay: ClosedRange<TimeAmount> = .zero ... .milliseconds(250)
        /// Between probes, and after the last one before announcing (§8.1: 250 ms).
        public var probeInterval: TimeAmount = .milliseconds(250)
        /// How many probes (§8.1: 3).
        public var probeCount = 3
        /// How long a host that lost simultaneous-probe tiebreaking waits before probing again
        /// (§8.2: one second).
        public var tiebreakDelay: TimeAmount = .seconds(1)
        /// How many unsolicited announcements (§8.3: at least 2).
        public var announcementCount = 2
        /// Between the first two announcements; it doubles after each (§8.3: at least 1 s).
        public var announcementInterval: TimeAmount = .seconds(1)
        /// The random wait before a multicast answer holding a shared record (PTR), which many
        /// responders may answer at once (§6: 20–120 ms). Answers of only unique records go at
        /// once.
        public var sharedAnswerDelay: ClosedRange<TimeAmount> = .milliseconds(20) ... .milliseconds(120)
        /// The wait before answering a query whose TC bit says more known answers follow
        /// (§7.2: 400–500 ms).
        public var truncatedQueryDelay: ClosedRange<TimeAmount> = .milliseconds(400) ... .milliseconds(500)
        /// The TTL of unique records: SRV, TXT, A, AAAA, NSEC (§10: 120 s for records holding a
        /// host name; Baton uses it for TXT too, so that a vanished device's records all age
        /// out together).
        public var recordTTL: UInt32 = 120
        /// The TTL of shared records: the service PTR and the service type enumeration PTR
        /// (§10: 75 minutes).
        public var sharedRecordTTL: UInt32 = 4500
        /// How long after a rename the responder first probes for the name asked for again; each
        /// probe that finds it still taken doubles the wait, up to ``maximumReclaimInterval``.
        /// A goodbye for that name brings the next probe forward (at most once per interval).
        public var reclaimInterval: TimeAmount = .seconds(5)
        /// The longest wait between probes for the name asked for (a real second device of the
        /// same name answers three small probes this often).
        public var maximumReclaimInterval: TimeAmount = .seconds(20)
        /// The least time between two re-announcements answering goodbyes for our records on
        /// one interface (§10.1 gives the owner one second to rescue them; §6 allows 250 ms
        /// between multicasts of a record when defending it): a stream of spoofed goodbyes
        /// makes at most four small packets a second.
        public var goodbyeDefenseInterval: TimeAmount = .milliseconds(250)

        /// RFC 6762's values.
        public init() {}
    }
}
