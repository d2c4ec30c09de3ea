import NIOCore

extension MDNSResponder {
    /// The instance's full name: its label, then the service type.
    var instanceFullName: DNSName {
        // The label was fitted to `labelLimit(for:)`, so the name is valid.
        DNSName(labels: [Array(instanceLabel.utf8)])!.appending(serviceType)!
    }

    /// The most bytes an instance label may have in front of `serviceType`: 63, or less if the
    /// whole name would otherwise be over 255 bytes.
    static func labelLimit(for serviceType: DNSName) -> Int {
        max(1, min(DNSName.maxLabelLength, DNSName.maxWireLength - 1 - serviceType.wireLength))
    }

    var ptrRecord: DNSResourceRecord {
        DNSResourceRecord(name: serviceType, ttl: timing.sharedRecordTTL, data: .ptr(instanceFullName))
    }

    var serviceTypeRecord: DNSResourceRecord {
        DNSResourceRecord(name: .serviceTypeEnumeration, ttl: timing.sharedRecordTTL, data: .ptr(serviceType))
    }

    var srvRecord: DNSResourceRecord {
        DNSResourceRecord(
            name: instanceFullName, cacheFlush: true, ttl: timing.recordTTL,
            data: .srv(priority: 0, weight: 0, port: port, target: host))
    }

    var txtRecord: DNSResourceRecord {
        DNSResourceRecord(name: instanceFullName, cacheFlush: true, ttl: timing.recordTTL, data: .txt(entries: txt))
    }

    /// The interfaces whose addresses a message on `interfaceIndex` carries: that one, or all
    /// when it is unknown or gone.
    func interfaces(for interfaceIndex: Int?) -> [MDNSInterface] {
        let all = transport.interfaces
        if let interfaceIndex, let one = all.first(where: { $0.index == interfaceIndex }) {
            return [one]
        }
        return all
    }

    /// A and AAAA records of the host name for the interface `interfaceIndex` (all interfaces
    /// when nil or unknown), IPv4 first, without duplicates.
    func addressRecords(for interfaceIndex: Int?) -> [DNSResourceRecord] {
        let chosen = interfaces(for: interfaceIndex)
        var seen = Set<[UInt8]>()
        let v4 = chosen.flatMap(\.ipv4Addresses).filter { seen.insert($0).inserted }
        let v6 = chosen.flatMap(\.ipv6Addresses).filter { seen.insert($0).inserted }
        return v4.map { DNSResourceRecord(name: host, cacheFlush: true, ttl: timing.recordTTL, data: .a($0)) }
            + v6.map { DNSResourceRecord(name: host, cacheFlush: true, ttl: timing.recordTTL, data: .aaaa($0)) }
    }

    /// The NSEC record saying which types exist at `name` (RFC 6762 §6.1): SRV and TXT for
    /// the instance, the address families there are for the host.
    func nsecRecord(for name: DNSName, interfaceIndex: Int?) -> DNSResourceRecord {
        let types: Set<DNSRecordType> =
            name == host ? Set(addressRecords(for: interfaceIndex).map(\.type)) : [.srv, .txt]
        return DNSResourceRecord(
            name: name, cacheFlush: true, ttl: timing.recordTTL, data: .nsec(next: name, types: types))
    }

    /// The unique records we hold for `name` on `interfaceIndex`, as a probe proposes them.
    func uniqueRecords(named name: DNSName, interfaceIndex: Int?) -> [DNSResourceRecord] {
        if name == instanceFullName { return [srvRecord, txtRecord] }
        if name == host { return addressRecords(for: interfaceIndex) }
        return []
    }

    /// Whether `record` is one of ours, on any interface, whatever its TTL: our own packets come
    /// back to us through multicast loopback, and must not look like a conflict.
    func isOwnRecord(_ record: DNSResourceRecord) -> Bool {
        let name = record.name
        if name == instanceFullName {
            return [srvRecord, txtRecord, nsecRecord(for: name, interfaceIndex: nil)]
                .contains { $0.isSameRecord(as: record) }
        }
        if name == host {
            if case .nsec = record.data {
                // Which families a host has may differ between interfaces.
                return true
            }
            return addressRecords(for: nil).contains { $0.isSameRecord(as: record) }
        }
        return false
    }

    /// `name` cut at a character boundary to fit a DNS label (63 bytes).
    static func fitLabel(_ name: String, limit: Int = DNSName.maxLabelLength) -> String {
        var result = ""
        var bytes = 0
        for character in name {
            let size = character.utf8.count
            guard bytes + size <= limit else { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    /// The name to try after `name` was taken: `X` → `X (2)`, `X (2)` → `X (3)`, cutting `X`
    /// so that the whole still fits a label (RFC 6763 Appendix D's style).
    static func nextInstanceName(after name: String, limit: Int = DNSName.maxLabelLength) -> String {
        var base = Substring(name)
        var number = 2
        if base.hasSuffix(")"), let open = base.lastIndex(of: "("), open > base.startIndex,
           base[base.index(before: open)] == " ",
           let current = Int(base[base.index(after: open)..<base.index(before: base.endIndex)]),
           (2..<Int.max).contains(current) {
            base = base[..<base.index(before: open)]
            number = current + 1
        }
        let suffix = " (\(number))"
        return fitLabel(fitLabel(String(base), limit: max(0, limit - suffix.utf8.count)) + suffix, limit: limit)
    }

    /// The host name to try after `name` was taken: `baton-1a2b3c4d.local.` →
    /// `baton-1a2b3c4d-2.local.` → `…-3`.
    static func nextHostName(after name: DNSName) -> DNSName {
        let label = name.firstLabel ?? "baton"
        var base = Substring(label)
        var number = 2
        if let dash = base.lastIndex(of: "-"), let current = Int(base[base.index(after: dash)...]),
           (2..<Int.max).contains(current) {
            base = base[..<dash]
            number = current + 1
        }
        let suffix = "-\(number)"
        let newLabel = fitLabel(String(base), limit: DNSName.maxLabelLength - suffix.utf8.count) + suffix
        return DNSName(labels: [Array(newLabel.utf8)])?.appending(name.parent ?? .local) ?? randomHostName()
    }

    /// `baton-` and 8 random hex digits, in `local.`.
    static func randomHostName() -> DNSName {
        let digits = String(UInt32.random(in: .min ... .max), radix: 16)
        let label = "baton-" + String(repeating: "0", count: 8 - digits.count) + digits
        return DNSName(labels: [Array(label.utf8)])!.appending(.local)!
    }
}
