import NIOCore

/// What a flood cannot do: fill the cache for good, or keep a newcomer out.
extension MDNSCache {
    /// Whether `sender` is serving a penalty for flooding at `now`.
    mutating func isIgnoring(_ sender: String, at now: NIODeadline) -> Bool {
        guard let until = penalties[sender] else { return false }
        if until > now { return true }
        penalties[sender] = nil
        return false
    }

    /// Whether a new record from `sender` may come in, making room if need be: a sender at its
    /// quota is caught flooding (its records go, and it is not heard for a while); a full cache
    /// or service type gives up a record of the sender holding the most there, unless that is
    /// `sender` itself, whose newcomer is then dropped.
    mutating func admit(_ record: DNSResourceRecord, from sender: String, at now: NIODeadline) -> Bool {
        // A quota as large as the cache is no quota: a full cache is handled below.
        if senderQuota < capacity, (slotsBySender[sender]?.count ?? 0) >= senderQuota {
            punish(sender, at: now)
            return false
        }
        if let type = Self.serviceType(of: record), let counts = countsByType[type], counts.total >= serviceTypeQuota {
            guard evictOne(ofType: type, toAdmit: sender) else {
                droppedForCapacity += 1
                return false
            }
        }
        if count >= capacity {
            guard evictOne(ofType: nil, toAdmit: sender) else {
                droppedForCapacity += 1
                return false
            }
        }
        return true
    }

    /// The entries evicted or purged since the last call.
    mutating func takeEvicted() -> [Entry] {
        defer { evicted = [] }
        return evicted
    }

    /// The senders caught flooding since the last call.
    mutating func takeNewFlooders() -> [String] {
        defer { newFlooders = [] }
        return newFlooders
    }

    /// The service type a record belongs to: the PTR's own name for a PTR (`_baton._tcp.local.`
    /// → instance), the instance's parent for SRV and TXT; nil for addresses and the rest.
    static func serviceType(of record: DNSResourceRecord) -> DNSName? {
        switch record.type {
        case .ptr: record.name
        case .srv, .txt: record.name.parent
        default: nil
        }
    }

    /// Drops every record of `sender` and ignores it for ``floodPenalty``.
    private mutating func punish(_ sender: String, at now: NIODeadline) {
        droppedForFlooding += 1
        if penalties.count >= Self.maximumPenalties {
            penalties = penalties.filter { $0.value > now }
            if penalties.count >= Self.maximumPenalties, let oldest = penalties.min(by: { $0.value < $1.value }) {
                penalties[oldest.key] = nil
            }
        }
        penalties[sender] = now + floodPenalty
        newFlooders.append(sender)
        for slot in slotsBySender[sender] ?? [] {
            if let entry = entries[slot.nameAndType]?[slot.key] { evicted.append(entry) }
            remove(slot.nameAndType, slot.key)
            droppedForFlooding += 1
        }
    }

    /// Evicts the oldest record (of `type`, when given) of the sender holding the most (of it);
    /// false when that sender is `newcomer`, or there is none.
    private mutating func evictOne(ofType type: DNSName?, toAdmit newcomer: String) -> Bool {
        let largest: String?
        if let type {
            largest = countsByType[type]?.bySender.max { $0.value < $1.value }?.key
        } else {
            largest = slotsBySender.max { $0.value.count < $1.value.count }?.key
        }
        guard let largest, largest != newcomer, let slots = slotsBySender[largest] else { return false }
        var oldest: (Slot, Entry)?
        for slot in slots {
            guard let entry = entries[slot.nameAndType]?[slot.key] else { continue }
            if let type, Self.serviceType(of: entry.record) != type { continue }
            if oldest.map({ entry.received < $0.1.received }) ?? true { oldest = (slot, entry) }
        }
        guard let (slot, entry) = oldest else { return false }
        evicted.append(entry)
        remove(slot.nameAndType, slot.key)
        return true
    }

    /// Counts `entry` at `slot` against its sender and type.
    mutating func index(_ entry: Entry, _ slot: Slot) {
        slotsBySender[entry.sender, default: []].insert(slot)
        if let type = Self.serviceType(of: entry.record) {
            countsByType[type, default: (0, [:])].total += 1
            countsByType[type]!.bySender[entry.sender, default: 0] += 1
        }
    }

    /// Undoes ``index(_:_:)``.
    mutating func unindex(_ entry: Entry, _ slot: Slot) {
        slotsBySender[entry.sender]?.remove(slot)
        if slotsBySender[entry.sender]?.isEmpty == true { slotsBySender[entry.sender] = nil }
        if let type = Self.serviceType(of: entry.record), var counts = countsByType[type] {
            counts.total -= 1
            counts.bySender[entry.sender, default: 0] -= 1
            if counts.bySender[entry.sender] == 0 { counts.bySender[entry.sender] = nil }
            countsByType[type] = counts.total > 0 ? counts : nil
        }
    }
}
