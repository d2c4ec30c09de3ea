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

        /// When the next refresh is due; nil when all are done or the record is going.
        var nextRefresh: NIODeadline? {
            guard fate == nil, refreshesDone < MDNSCache.refreshPoints.count, record.ttl > 0 else { return nil }
            let fraction = MDNSCache.refreshPoints[refreshesDone] + jitter
            return received + .nanoseconds(Int64(Double(record.ttl) * fraction * 1e9))
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

    private struct Key: Hashable {
        var interfaceIndex: Int
        var name: DNSName
        var data: DNSRecordData
    }

    private struct NameAndType: Hashable {
        var name: DNSName
        var type: DNSRecordType
    }

    private var entries: [Key: Entry] = [:]
    /// The keys of each name and type, for lookups.
    private var index: [NameAndType: Set<Key>] = [:]

    /// The most entries kept; records beyond are dropped, so a flood cannot use up memory.
    let capacity: Int
    /// How many records were dropped because the cache was full.
    private(set) var droppedForCapacity = 0

    init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// How many records are cached.
    var count: Int { entries.count }

    /// Takes in `record`, received on `interfaceIndex` at `now`. Returns whether the cache
    /// changed in a way a reader could see: a new record, or one now saying goodbye; a mere
    /// TTL refresh returns false.
    ///
    /// `jitter` (0 ... 0.02) is added to each refresh point; give the records of one packet the
    /// same, so that they are refreshed by one query.
    @discardableResult
    mutating func insert(
        _ record: DNSResourceRecord, interfaceIndex: Int, at now: NIODeadline,
        jitter: Double = .random(in: 0...0.02)
    ) -> Bool {
        let key = Key(interfaceIndex: interfaceIndex, name: record.name, data: record.data)
        if record.ttl == 0 {
            guard var entry = entries[key] else { return false }
            let changed = entry.fate != .goodbye
            entry.fate = .goodbye
            entry.expires = min(entry.expires, now + .seconds(1))
            entries[key] = entry
            return changed
        }
        let nameAndType = NameAndType(name: record.name, type: record.type)
        if record.cacheFlush {
            for other in index[nameAndType] ?? [] where other != key && other.interfaceIndex == interfaceIndex {
                guard var entry = entries[other], now - entry.received > .seconds(1) else { continue }
                entry.expires = min(entry.expires, now + .seconds(1))
                if entry.fate == nil { entry.fate = .flushed }
                entries[other] = entry
            }
        }
        let existing = entries[key]
        if existing == nil, entries.count >= capacity {
            droppedForCapacity += 1
            return false
        }
        entries[key] = Entry(
            record: record, interfaceIndex: interfaceIndex, received: now, expires: now + .seconds(Int64(record.ttl)),
            jitter: jitter)
        index[nameAndType, default: []].insert(key)
        return existing == nil || existing?.fate != nil
    }

    /// The live entries of `name` and `type`, on every interface.
    func entries(named name: DNSName, type: DNSRecordType) -> [Entry] {
        (index[NameAndType(name: name, type: type)] ?? []).compactMap { entries[$0] }
    }

    /// Records of `name` and `type` on `interfaceIndex` to list as known answers
    /// (RFC 6762 §7.1): those with more than half their TTL left, with the TTL left.
    func knownAnswers(named name: DNSName, type: DNSRecordType, interfaceIndex: Int, at now: NIODeadline)
        -> [DNSResourceRecord]
    {
        entries(named: name, type: type).filter { $0.interfaceIndex == interfaceIndex && $0.fate == nil }
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
        for (key, entry) in entries where entry.expires <= now {
            remove(key)
            let why: Removal =
                switch entry.fate {
                case .goodbye: .goodbye
                case .flushed: .flushed
                case nil: .expired
                }
            removed.append((entry, why))
        }
        return removed
    }

    /// The entries whose next refresh point has come by `now`, each counted as refreshed once
    /// (if several points passed, only the latest counts).
    mutating func dueRefreshes(at now: NIODeadline) -> [Entry] {
        var due: [Entry] = []
        for (key, var entry) in entries {
            guard let next = entry.nextRefresh, next <= now else { continue }
            while let next = entry.nextRefresh, next <= now {
                entry.refreshesDone += 1
            }
            entries[key] = entry
            due.append(entry)
        }
        return due
    }

    /// Removes every entry learned on `interfaceIndex`, returning them.
    mutating func removeInterface(_ interfaceIndex: Int) -> [Entry] {
        let keys = entries.keys.filter { $0.interfaceIndex == interfaceIndex }
        return keys.compactMap { key in
            defer { remove(key) }
            return entries[key]
        }
    }

    /// When the next expiry or refresh is due; nil if the cache is empty.
    var nextDeadline: NIODeadline? {
        entries.values.reduce(nil) { earliest, entry in
            let next = entry.nextRefresh.map { min($0, entry.expires) } ?? entry.expires
            return earliest.map { min($0, next) } ?? next
        }
    }

    private mutating func remove(_ key: Key) {
        entries[key] = nil
        let nameAndType = NameAndType(name: key.name, type: key.data.type)
        index[nameAndType]?.remove(key)
        if index[nameAndType]?.isEmpty == true { index[nameAndType] = nil }
    }
}
