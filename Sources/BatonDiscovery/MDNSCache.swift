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

    private struct NameAndType: Hashable {
        var name: DNSName
        var type: DNSRecordType
    }

    /// One record of a name and type: its data, on one interface.
    private struct DataKey: Hashable {
        var interfaceIndex: Int
        var data: DNSRecordData
    }

    /// The entries by name and type, then by interface and data: listing a name's records
    /// hashes one key, not one per record.
    private var entries: [NameAndType: [DataKey: Entry]] = [:]
    /// How many entries there are.
    private(set) var count = 0
    /// Every interface an entry was learned on, for lookups across interfaces.
    private var interfaceIndices = Set<Int>()
    /// The earliest expiry or refresh, kept as records come in (each packet must cost little);
    /// nil when it must be found again, after removals and refreshes.
    private var earliest: NIODeadline??

    /// The most entries kept; records beyond are dropped, so a flood cannot use up memory.
    let capacity: Int
    /// How many records were dropped because the cache was full.
    private(set) var droppedForCapacity = 0

    init(capacity: Int = 4096) {
        self.capacity = capacity
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
        jitter: Double = .random(in: 0...0.02), fromLegacyReply: Bool = false
    ) -> Bool {
        let nameAndType = NameAndType(name: record.name, type: record.type)
        let key = DataKey(interfaceIndex: interfaceIndex, data: record.data)
        if fromLegacyReply {
            guard record.ttl > 0, entries[nameAndType]?[key] == nil else { return false }
            guard count < capacity else {
                droppedForCapacity += 1
                return false
            }
            var entry = Entry(
                record: record, interfaceIndex: interfaceIndex, received: now,
                expires: now + .seconds(Int64(record.ttl)), jitter: jitter)
            entry.record.cacheFlush = false
            entry.isFromLegacyReply = true
            entries[nameAndType, default: [:]][key] = entry
            if case .some(let known) = earliest {
                earliest = .some(known.map { min($0, entry.nextDeadline) } ?? entry.nextDeadline)
            }
            count += 1
            interfaceIndices.insert(interfaceIndex)
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
        if existing == nil, count >= capacity {
            droppedForCapacity += 1
            return false
        }
        let entry = Entry(
            record: record, interfaceIndex: interfaceIndex, received: now, expires: now + .seconds(Int64(record.ttl)),
            jitter: jitter)
        entries[nameAndType, default: [:]][key] = entry
        // A replaced entry may have been the earliest; then this is early, which only costs a
        // timer that finds nothing to do.
        if case .some(let known) = earliest {
            earliest = .some(known.map { min($0, entry.nextDeadline) } ?? entry.nextDeadline)
        }
        if existing == nil {
            count += 1
            interfaceIndices.insert(interfaceIndex)
        }
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

    private mutating func remove(_ nameAndType: NameAndType, _ key: DataKey) {
        guard entries[nameAndType]?.removeValue(forKey: key) != nil else { return }
        earliest = nil
        count -= 1
        if entries[nameAndType]?.isEmpty == true { entries[nameAndType] = nil }
    }
}
