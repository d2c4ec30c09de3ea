import NIOCore

/// A resource record (RFC 1035 §4.1.3): an answer, authority or additional record.
///
/// `==` compares every field, TTL included; ``isSameRecord(as:)`` is the comparison mDNS uses to
/// decide whether two records are the same one.
public struct DNSResourceRecord: Sendable, Hashable, CustomStringConvertible {
    /// The owner name.
    public var name: DNSName
    /// The class, without the cache-flush bit.
    public var recordClass: DNSClass
    /// mDNS's cache-flush bit, the top bit of the class field in a response: this record replaces
    /// every other record of its name, type and class in the receiver's cache (RFC 6762 §10.2).
    /// Set on unique records (SRV, TXT, addresses), never on shared ones (PTR) or in queries.
    public var cacheFlush: Bool
    /// Seconds the record may be cached; 0 says it is going away (RFC 6762 §10.1).
    public var ttl: UInt32
    /// The typed data, which also gives the record's ``type``.
    public var data: DNSRecordData

    /// The record type, from ``data``.
    public var type: DNSRecordType { data.type }

    /// A record of `name` holding `data`; class IN and cache-flush clear unless given.
    public init(
        name: DNSName, recordClass: DNSClass = .internet, cacheFlush: Bool = false, ttl: UInt32,
        data: DNSRecordData
    ) {
        self.name = name
        self.recordClass = recordClass
        self.cacheFlush = cacheFlush
        self.ttl = ttl
        self.data = data
    }

    /// Whether `other` is the same record: same name (ignoring case), type, class and rdata,
    /// whatever the TTLs and cache-flush bits. Used for known-answer suppression (RFC 6762 §7.1)
    /// and to tell a conflicting record from our own one echoed back (§9).
    public func isSameRecord(as other: DNSResourceRecord) -> Bool {
        recordClass == other.recordClass && data == other.data && name == other.name
    }

    /// RFC 6762 §8.2 order for simultaneous-probe tiebreaking: class (without the cache-flush
    /// bit), then type, then the uncompressed rdata byte by byte as unsigned values, where data
    /// that runs out first is earlier. Negative if this record is lexicographically earlier than
    /// `other`, zero if equal, positive if later. The names are not compared, and names inside
    /// rdata compare as raw bytes, case included.
    public func lexicographicOrder(comparedTo other: DNSResourceRecord) -> Int {
        if recordClass != other.recordClass { return recordClass.rawValue < other.recordClass.rawValue ? -1 : 1 }
        if type != other.type { return type < other.type ? -1 : 1 }
        return Self.compareBytes(data.uncompressedBytes, other.data.uncompressedBytes)
    }

    /// RFC 6762 §8.2.1 order of two hosts' probes for one name: each set sorted
    /// lexicographically, then compared record by record; the first difference decides, and if
    /// one set runs out first the other is later. Positive means `ours` is later, so we win and
    /// carry on probing; negative means we lose and must wait one second before probing again;
    /// zero means the sets are identical, which is no conflict.
    public static func lexicographicOrder(of ours: [DNSResourceRecord], comparedTo theirs: [DNSResourceRecord]) -> Int {
        // Sort on the class, type and bytes once rather than re-encoding on every comparison.
        func keyed(_ records: [DNSResourceRecord]) -> [(UInt16, UInt16, [UInt8])] {
            records.map { ($0.recordClass.rawValue, $0.type.rawValue, $0.data.uncompressedBytes) }
                .sorted { a, b in
                    if a.0 != b.0 { return a.0 < b.0 }
                    if a.1 != b.1 { return a.1 < b.1 }
                    return a.2.lexicographicallyPrecedes(b.2)
                }
        }
        let ourKeys = keyed(ours)
        let theirKeys = keyed(theirs)
        for (our, their) in zip(ourKeys, theirKeys) {
            if our.0 != their.0 { return our.0 < their.0 ? -1 : 1 }
            if our.1 != their.1 { return our.1 < their.1 ? -1 : 1 }
            let order = compareBytes(our.2, their.2)
            if order != 0 { return order }
        }
        return ourKeys.count == theirKeys.count ? 0 : (ourKeys.count > theirKeys.count ? 1 : -1)
    }

    /// Appends the record, its names through `names`.
    func write(into buffer: inout ByteBuffer, names: inout DNSNameCompressor) {
        names.write(name, into: &buffer)
        buffer.writeInteger(type.rawValue)
        buffer.writeInteger(recordClass.rawValue | (cacheFlush ? 0x8000 : 0))
        buffer.writeInteger(ttl)
        // The length is known only once the (compressed) data is written.
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt16(0))
        data.write(into: &buffer, names: &names)
        let length = buffer.writerIndex - lengthIndex - 2
        precondition(length <= Int(UInt16.max), "record data of \(length) bytes is over 65535")
        buffer.setInteger(UInt16(length), at: lengthIndex)
    }

    /// `name ttl class type data`, with ` (flush)` when the cache-flush bit is set.
    public var description: String {
        "\(name) \(ttl) \(recordClass) \(type) \(data)" + (cacheFlush ? " (flush)" : "")
    }

    private static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y {
            return x < y ? -1 : 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}
