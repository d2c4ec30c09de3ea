import NIOCore

extension MDNSBrowser {
    /// Caches what a response says about our service type, whoever asked for it: PTR records
    /// of the type, SRV and TXT of its instances, and the addresses of their hosts. A reply to
    /// our one-shot query is `fromLegacyReply`: its records only fill gaps in the cache.
    func handleResponse(_ received: MDNSReceivedMessage, fromLegacyReply: Bool = false) {
        let now = eventLoop.now
        let interfaceIndex = received.interfaceIndex ?? 0
        let sender = received.source.ipAddress ?? ""
        let records = received.message.answers + received.message.additionals
        // One jitter for the packet, so that its records are refreshed by one query.
        let jitter = Double.random(in: 0...0.02)
        var affected = Set<DNSName>()
        for record in records where record.recordClass == .internet {
            switch record.data {
            case .ptr(let instance) where record.name == serviceType:
                affected.insert(instance)
            case .srv, .txt:
                guard record.name.parent == serviceType else { continue }
                affected.insert(record.name)
            default:
                continue
            }
            cache.insert(
                record, interfaceIndex: interfaceIndex, at: now, jitter: jitter, fromLegacyReply: fromLegacyReply,
                sender: sender)
        }
        // Addresses after the SRV records, which may be in the same packet.
        let addresses = records.filter { $0.recordClass == .internet && ($0.type == .a || $0.type == .aaaa) }
        if !addresses.isEmpty {
            let owners = instancesByHost(among: affected)
            var reportedOwners: [DNSName: [DNSName]]?
            for record in addresses {
                // Usually the SRV came in the same packet; otherwise the host may be a
                // reported instance's, whose address changed.
                if owners[record.name] == nil, reportedOwners == nil {
                    reportedOwners = Dictionary(grouping: reported.keys) { reported[$0]!.hostName }
                }
                guard let instances = owners[record.name] ?? reportedOwners?[record.name] else { continue }
                cache.insert(
                    record, interfaceIndex: interfaceIndex, at: now, jitter: jitter, fromLegacyReply: fromLegacyReply,
                    sender: sender)
                affected.formUnion(instances)
            }
        }
        affected.formUnion(takeEvictions())
        guard !affected.isEmpty else { return }
        lastAnswerAt = now
        reconcile(affected)
        rescheduleCacheTimer()
    }

    /// Notes the records the cache gave up to make room or because their sender flooded, and
    /// logs each newly caught flooder once; returns the instances they may have changed.
    private func takeEvictions() -> Set<DNSName> {
        for flooder in cache.takeNewFlooders() {
            logger.warning(
                "mDNS: a host sent more records than its quota; ignoring it for a while",
                metadata: [
                    "from": "\(flooder)", "quota": "\(cache.senderQuota)", "for": "\(timing.floodPenalty)",
                ])
        }
        var affected = Set<DNSName>()
        for entry in cache.takeEvicted() {
            affected.formUnion(noteRemoval(of: entry, reason: .expired))
        }
        return affected
    }

    /// Reports what changed of the `affected` instances (all when nil) since they were last
    /// looked at: one with a PTR and SRV, TXT and an address is added or updated, and one
    /// reported before but no longer so is removed. Also notes which still need resolving.
    ///
    /// Only what a packet touched is looked at: a hundred instances on the link answer one
    /// query with a hundred packets, and each must cost little.
    func reconcile(_ affected: Set<DNSName>? = nil) {
        let now = eventLoop.now
        let candidates = affected ?? Set(allInstances()).union(reported.keys)
        var changes: [(String, MDNSService?)] = []
        // In wire order, so that events of one packet come in a repeatable order.
        for instance in candidates.sorted(by: { $0.storage.lexicographicallyPrecedes($1.storage) }) {
            let isPresent = !cache.entries(named: serviceType, data: .ptr(instance)).isEmpty
            var service = isPresent ? service(named: instance) : nil
            if let old = reported[instance] {
                // Names compare ignoring case, and peers may spell one differently: the name
                // first reported stays, so events about one instance always carry one name.
                service?.instanceName = old.instanceName
                service?.fullName = old.fullName
            }
            switch (reported[instance], service) {
            case (nil, let service?):
                reported[instance] = service
                lastRemoval[instance] = nil
                changes.append((service.instanceName, service))
                report(.added(service))
            case (let old?, let service?) where old != service:
                reported[instance] = service
                lastRemoval[instance] = nil
                changes.append((service.instanceName, service))
                report(.updated(service))
            case (let old?, nil):
                reported[instance] = nil
                changes.append((old.instanceName, nil))
                report(.removed(instanceName: old.instanceName, reason: lastRemoval[instance] ?? .expired))
            default:
                break
            }
            if !isPresent { lastRemoval[instance] = nil }
            if isPresent, service == nil {
                if resolving[instance] == nil { resolving[instance] = (now + timing.resolveDelay, 0) }
            } else {
                resolving[instance] = nil
            }
        }
        if !changes.isEmpty { publish(changes) }
        scheduleResolve()
    }

    /// The instance as far as the cache knows it; nil unless SRV, TXT and an address are known.
    private func service(named instance: DNSName) -> MDNSService? {
        guard let srv = newest(cache.entries(named: instance, type: .srv)),
              case .srv(_, _, let port, let target) = srv.record.data,
              let txt = newest(cache.entries(named: instance, type: .txt)) else { return nil }
        let addresses = addresses(of: target)
        guard !addresses.isEmpty else { return nil }
        let interfaces = cache.entries(named: serviceType, data: .ptr(instance)).map(\.interfaceIndex)
            + [srv.interfaceIndex]
        return MDNSService(
            instanceName: instance.firstLabel ?? "", fullName: instance, hostName: target, port: port,
            addresses: addresses, txt: txt.record.data.txtEntries ?? [], interfaceIndices: Set(interfaces).sorted())
    }

    /// The addresses cached for `host`, IPv4 first, each family in a stable order.
    func addresses(of host: DNSName) -> [MDNSServiceAddress] {
        let records = cache.entries(named: host, type: .a) + cache.entries(named: host, type: .aaaa)
        let addresses = Set(
            records.compactMap { entry -> MDNSServiceAddress? in
                switch entry.record.data {
                case .a(let bytes), .aaaa(let bytes): MDNSServiceAddress(bytes: bytes, interfaceIndex: entry.interfaceIndex)
                default: nil
                }
            })
        return addresses.sorted { a, b in
            if a.bytes.count != b.bytes.count { return a.bytes.count < b.bytes.count }
            if a.bytes != b.bytes { return a.bytes.lexicographicallyPrecedes(b.bytes) }
            return a.interfaceIndex < b.interfaceIndex
        }
    }

    /// The most recently received of `entries`, preferring one not on its way out: after a
    /// cache flush the new record is the one that counts.
    func newest(_ entries: [MDNSCache.Entry]) -> MDNSCache.Entry? {
        entries.max { a, b in
            if (a.fate == nil) != (b.fate == nil) { return a.fate != nil }
            return a.received < b.received
        }
    }

    /// The instances known by PTR.
    func allInstances() -> [DNSName] {
        cache.entries(named: serviceType, type: .ptr).compactMap { entry in
            guard case .ptr(let instance) = entry.record.data else { return nil }
            return instance
        }
    }

    /// The instances the packet spoke of and those being resolved, by the SRV target host they
    /// name. (Addresses of hosts no instance names are of no use to us.)
    private func instancesByHost(among affected: Set<DNSName>) -> [DNSName: [DNSName]] {
        var owners: [DNSName: [DNSName]] = [:]
        for instance in affected.union(resolving.keys) {
            guard let srv = newest(cache.entries(named: instance, type: .srv)),
                  case .srv(_, _, _, let target) = srv.record.data else { continue }
            owners[target, default: []].append(instance)
        }
        return owners
    }

    /// Notes why a record of an instance left, for the `removed` event it may cause; returns
    /// the instances it may have changed.
    @discardableResult
    func noteRemoval(of entry: MDNSCache.Entry, reason: RemovalReason) -> [DNSName] {
        var instances: [DNSName] = []
        switch entry.record.data {
        case .ptr(let instance):
            instances = [instance]
        case .srv, .txt:
            instances = [entry.record.name]
        case .a, .aaaa:
            instances = reported.filter { $0.value.hostName == entry.record.name }.map(\.key)
        default:
            break
        }
        for instance in instances where lastRemoval[instance] != .goodbye {
            lastRemoval[instance] = reason
        }
        return instances
    }
}
