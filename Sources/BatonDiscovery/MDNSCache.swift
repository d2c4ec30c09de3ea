import NIOCore

/// Records learned from mDNS responses, kept per interface as RFC 6762 §14 asks (a host may
/// give each interface its own addresses, each with the cache-flush bit), each until its TTL
/// runs out.
///
/// - Refresh (§5.2): at 80 %, 85 %, 90 % and 95 % of a record's TTL, plus up to 2 % of random
///   jitter, ``dueRefreshes(at:)`` hands it out to be asked for again; an answer resets it.
/// - Goodbye (§10.1): a record received with TTL 0 is removed one second later.
/// - Cache flush (§10.2): a record with the cache-flush bit makes every other record of its
///   name, type and class on that interface that was received more than a second earlier
///   expire one second later.
///
/// - Legacy unicast replies (§6.7): records from a reply to our one-shot query carry TTLs
///   capped at 10 seconds, not their real ones. They are only taken when the cache has nothing
///   for them, so they never cut short what multicast taught us, and are never listed as known
///   answers, so that the next query has every responder multicast them with their real TTL.
///
/// - What a stranger can make it hold (RFC 6762 §21 leaves it to us): every TTL is cut to
///   ``maximumTTL``; each sender address may hold ``senderQuota`` records and each service type
///   ``serviceTypeQuota``; a sender that goes over its quota is flooding: its records are dropped
///   and it is not heard for ``floodPenalty``. When the cache is full (or a type is), a
///   newcomer takes the place of a record of the sender holding the most, so a real device that
///   starts during or after a flood still gets in. Memory is bounded: at most ``capacity``
///   records, each no larger than the 9,000-byte datagram it came in (RFC 6762 §17; a few
///   hundred bytes in practice), indexed once by name and once by sender, and at most
///   ``maximumPenalties`` senders being ignored: with the defaults, 4,096 records, under 40 MB
///   at the very worst and about 2 MB for records of Baton's size.
///
/// Times come from the caller (the event loop's clock), so tests can run it in virtual time.
struct MDNSCache {
    /// One cached record.
    struct Entry: Sendable {
        /// The record as received, its original TTL included.
        var record: DNSResourceRecord
        var interfaceIndex: Int
        var received: NIODeadline
        var expires: NIODeadline
        /// How many of the four refresh points have passed.
        var refreshesDone = 0
        /// This record's random extra, 0 ... 2 %, on each refresh point.
        var jitter: Double
        /// Why the record is on its way out, if a goodbye or cache flush cut its life short.
        var fate: Fate?
        /// Whether it came from a legacy unicast reply, with a capped TTL, and nothing has
        /// replaced it since.
        var isFromLegacyReply = false
        /// The address of the host that sent it last, whose quota it counts against.
        var sender = ""

        /// When the next refresh is due; nil when all are done or the record is going.
        var nextRefresh: NIODeadline? {
            guard fate == nil, refreshesDone < MDNSCache.refreshPoints.count, record.ttl > 0 else { return nil }
            let fraction = MDNSCache.refreshPoints[refreshesDone] + jitter
            return received + .nanoseconds(Int64(Double(record.ttl) * fraction * 1e9))
        }

        /// When this entry next needs attention: a refresh, or its expiry.
        var nextDeadline: NIODeadline {
            nextRefresh.map { min($0, expires) } ?? expires
        }

        /// Seconds of TTL left at `now`, rounded down.
        func remainingTTL(at now: NIODeadline) -> UInt32 {
            let left = (expires - now).nanoseconds / 1_000_000_000
            return UInt32(clamping: max(left, 0))
        }
    }

    /// Why an entry left early.
    enum Fate: Sendable, Hashable {
        /// The record was received with TTL 0.
        case goodbye
        /// A newer record of the same name and type, with the cache-flush bit, replaced it.
        case flushed
    }

    /// Why an entry was removed.
    enum Removal: Sendable, Hashable {
        case goodbye, flushed, expired, interfaceRemoved
    }

    /// Where in its lifetime a record is asked for again.
    static let refreshPoints: [Double] = [0.80, 0.85, 0.90, 0.95]

    struct NameAndType: Hashable {
        var name: DNSName
        var type: DNSRecordType
    }

    /// One record of a name and type: its data, on one interface.
    struct DataKey: Hashable {
        var interfaceIndex: Int
        var data: DNSRecordData
    }

    /// The entries by name and type, then by interface and data: listing a name's records
    /// hashes one key, not one per record.
    var entries: [NameAndType: [DataKey: Entry]] = [:]
    /// How many entries there are.
    var count = 0
    /// Every interface an entry was learned on, for lookups across interfaces.
    private var interfaceIndices = Set<Int>()
    /// The earliest expiry or refresh, kept as records come in (each packet must cost little);
    /// nil when it must be found again, after removals and refreshes.
    var earliest: NIODeadline??

    /// Where one entry is: its name and type, then its interface and data.
    struct Slot: Hashable {
        var nameAndType: NameAndType
        var key: DataKey
    }

    /// The entries each sender holds, for its quota and for eviction.
    var slotsBySender: [String: Set<Slot>] = [:]
    /// How many entries each service type has, and of those how many each sender holds.
    var countsByType: [DNSName: (total: Int, bySender: [String: Int])] = [:]
    /// Senders caught flooding, and until when they are not heard.
    var penalties: [String: NIODeadline] = [:]
    /// Entries evicted or purged since ``takeEvicted()`` was last called: the browser reports
    /// what they leave behind.
    var evicted: [Entry] = []
    /// Senders caught flooding since ``takeNewFlooders()`` was last called, to log once each.
    var newFlooders: [String] = []

    /// The longest TTL kept: RFC 6762 §10's 75 minutes, the TTL it recommends for shared
    /// records and the longest any Baton responder gives. A longer one (2^31 seconds, say)
    /// would keep a stranger's record for ever after it stops sending.
    static let maximumTTL: UInt32 = 4_500
    /// The most senders ignored at once (each was caught over its quota).
    static let maximumPenalties = 1_024

    /// The most entries kept; records beyond are dropped, so a flood cannot use up memory.
    let capacity: Int
    /// The most entries one sender address may hold; one that sends more is flooding.
    let senderQuota: Int
    /// The most entries of one service type (PTRs of the type, SRV and TXT of its instances).
    let serviceTypeQuota: Int
    /// How long a sender caught flooding is not heard.
    let floodPenalty: TimeAmount
    /// How many records were dropped because the cache was full.
    var droppedForCapacity = 0
    /// How many records were refused or dropped because their sender flooded.
    var droppedForFlooding = 0

    /// A cache of at most `capacity` records; a sender may hold `senderQuota` (a quarter of the
    /// capacity by default: a host with 170 instances of a type), a service type
    /// `serviceTypeQuota` (three quarters, leaving room for addresses); a sender over its quota
    /// is not heard for `floodPenalty`.
    init(
        capacity: Int = 4096, senderQuota: Int? = nil, serviceTypeQuota: Int? = nil,
        floodPenalty: TimeAmount = .seconds(60)
    ) {
        self.capacity = capacity
        // A tiny cache (tests') is all one sender's and one type's.
        self.senderQuota = senderQuota ?? (capacity >= 64 ? capacity / 4 : capacity)
        self.serviceTypeQuota = serviceTypeQuota ?? (capacity >= 64 ? capacity * 3 / 4 : capacity)
        self.floodPenalty = floodPenalty
    }

    /// Takes in `record`, received on `interfaceIndex` at `now`. Returns whether the cache
    /// changed in a way a reader could see: a new record, or one now saying goodbye; a mere
    /// TTL refresh returns false.
    ///
    /// `jitter` (0 ... 0.02) is added to each refresh point; give the records of one packet the
    /// same, so that they are refreshed by one query.
    ///
    /// `fromLegacyReply` marks a record of a unicast reply to a one-shot query (§6.7): taken only
    /// if the cache has no entry for it at all, and never as a goodbye or a cache flush. Its TTL
    /// is at most 10 seconds whatever the real one, so it must not replace a record multicast
    /// taught us, nor undo a goodbye or a flush.
    @discardableResult
    mutating func insert(
        _ record: DNSResourceRecord, interfaceIndex: Int, at now: NIODeadline,
        jitter: Double = .random(in: 0...0.02), fromLegacyReply: Bool = false, sender: String = ""
    ) -> Bool {
        guard !isIgnoring(sender, at: now) else {
            droppedForFlooding += 1
            return false
        }
        var record = record
        record.ttl = min(record.ttl, Self.maximumTTL)
        let nameAndType = NameAndType(name: record.name, type: record.type)
        let key = DataKey(interfaceIndex: interfaceIndex, data: record.data)
        if fromLegacyReply {
            guard record.ttl > 0, entries[nameAndType]?[key] == nil else { return false }
            guard admit(record, from: sender, at: now) else { return false }
            var entry = Entry(
                record: record, interfaceIndex: interfaceIndex, received: now,
                expires: now + .seconds(Int64(record.ttl)), jitter: jitter, sender: sender)
            entry.record.cacheFlush = false
            entry.isFromLegacyReply = true
            store(entry, Slot(nameAndType: nameAndType, key: key), replacing: nil)
            return true
        }
        if record.ttl == 0 {
            guard var entry = entries[nameAndType]?[key] else { return false }
            let changed = entry.fate != .goodbye
            entry.fate = .goodbye
            entry.expires = min(entry.expires, now + .seconds(1))
            entries[nameAndType]![key] = entry
            earliest = nil
            return changed
        }
        if record.cacheFlush {
            // Keys first, then changes in place: holding the inner dictionary while changing it
            // would copy it.
            let stale = (entries[nameAndType] ?? [:]).compactMap { other, entry in
                other != key && other.interfaceIndex == interfaceIndex && now - entry.received > .seconds(1)
                    ? other : nil
            }
            if !stale.isEmpty { earliest = nil }
            for other in stale {
                entries[nameAndType]![other]!.expires = min(entries[nameAndType]![other]!.expires, now + .seconds(1))
                if entries[nameAndType]![other]!.fate == nil { entries[nameAndType]![other]!.fate = .flushed }
            }
        }
        let existing = entries[nameAndType]?[key]
        if existing == nil, !admit(record, from: sender, at: now) {
            return false
        }
        let entry = Entry(
            record: record, interfaceIndex: interfaceIndex, received: now, expires: now + .seconds(Int64(record.ttl)),
            jitter: jitter, sender: sender)
        store(entry, Slot(nameAndType: nameAndType, key: key), replacing: existing)
        return existing == nil || existing?.fate != nil
    }

    /// The live entries of `name` and `type`, on every interface.
    func entries(named name: DNSName, type: DNSRecordType) -> [Entry] {
        entries[NameAndType(name: name, type: type)].map { Array($0.values) } ?? []
    }

    /// The entries of `name` holding `data`, on every interface.
    func entries(named name: DNSName, data: DNSRecordData) -> [Entry] {
        guard let set = entries[NameAndType(name: name, type: data.type)] else { return [] }
        return interfaceIndices.compactMap { set[DataKey(interfaceIndex: $0, data: data)] }
    }

    /// Records of `name` and `type` on `interfaceIndex` to list as known answers
    /// (RFC 6762 §7.1): those with more than half their TTL left, with the TTL left.
    func knownAnswers(named name: DNSName, type: DNSRecordType, interfaceIndex: Int, at now: NIODeadline)
        -> [DNSResourceRecord]
    {
        entries(named: name, type: type)
            .filter { $0.interfaceIndex == interfaceIndex && $0.fate == nil && !$0.isFromLegacyReply }
            .compactMap { entry in
                let left = entry.remainingTTL(at: now)
                guard left > entry.record.ttl / 2 else { return nil }
                var record = entry.record
                record.ttl = left
                record.cacheFlush = false
                return record
            }
    }

    /// Removes the entries that have expired by `now`, returning them and why.
    mutating func removeExpired(at now: NIODeadline) -> [(Entry, Removal)] {
        var removed: [(Entry, Removal)] = []
        for (nameAndType, set) in entries {
            for (key, entry) in set where entry.expires <= now {
                remove(nameAndType, key)
                let why: Removal =
                    switch entry.fate {
                    case .goodbye: .goodbye
                    case .flushed: .flushed
                    case nil: .expired
                    }
                removed.append((entry, why))
            }
        }
        return removed
    }

    /// The entries whose next refresh point has come by `now`, each counted as refreshed once
    /// (if several points passed, only the latest counts).
    mutating func dueRefreshes(at now: NIODeadline) -> [Entry] {
        earliest = nil
        var due: [Entry] = []
        for (nameAndType, set) in entries {
            for (key, var entry) in set {
                guard let next = entry.nextRefresh, next <= now else { continue }
                while let next = entry.nextRefresh, next <= now {
                    entry.refreshesDone += 1
                }
                entries[nameAndType]![key] = entry
                due.append(entry)
            }
        }
        return due
    }

    /// Removes every entry learned on `interfaceIndex`, returning them.
    mutating func removeInterface(_ interfaceIndex: Int) -> [Entry] {
        var removed: [Entry] = []
        for (nameAndType, set) in entries {
            for (key, entry) in set where key.interfaceIndex == interfaceIndex {
                remove(nameAndType, key)
                removed.append(entry)
            }
        }
        interfaceIndices.remove(interfaceIndex)
        return removed
    }

    /// When the next expiry or refresh is due; nil if the cache is empty.
    var nextDeadline: NIODeadline? {
        mutating get {
            if case .some(let known) = earliest { return known }
            var found: NIODeadline?
            for set in entries.values {
                for entry in set.values where found.map({ entry.nextDeadline < $0 }) ?? true {
                    found = entry.nextDeadline
                }
            }
            earliest = .some(found)
            return found
        }
    }

    mutating func remove(_ nameAndType: NameAndType, _ key: DataKey) {
        guard let entry = entries[nameAndType]?.removeValue(forKey: key) else { return }
        earliest = nil
        count -= 1
        if entries[nameAndType]?.isEmpty == true { entries[nameAndType] = nil }
        unindex(entry, Slot(nameAndType: nameAndType, key: key))
    }

    /// Puts `entry` at `slot`, in place of `existing` if there was one, and indexes it.
    private mutating func store(_ entry: Entry, _ slot: Slot, replacing existing: Entry?) {
        entries[slot.nameAndType, default: [:]][slot.key] = entry
        // A replaced entry may have been the earliest; then this is early, which only costs a
        // timer that finds nothing to do.
        if case .some(let known) = earliest {
            earliest = .some(known.map { min($0, entry.nextDeadline) } ?? entry.nextDeadline)
        }
        if let existing {
            guard existing.sender != entry.sender else { return }
            unindex(existing, slot)
        } else {
            count += 1
            interfaceIndices.insert(slot.key.interfaceIndex)
        }
        index(entry, slot)
    }
}
