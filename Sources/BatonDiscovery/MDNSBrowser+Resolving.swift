import NIOCore

extension MDNSBrowser {
    /// Caches what a response says about our service type, whoever asked for it: PTR records
    /// of the type, SRV and TXT of its instances, and the addresses of their hosts.
    func handleResponse(_ received: MDNSReceivedMessage) {
        let now = eventLoop.now
        let interfaceIndex = received.interfaceIndex ?? 0
        let records = received.message.answers + received.message.additionals
        var relevant = false
        let jitter = Double.random(in: 0...0.02)
        for record in records where record.recordClass == .internet {
            let wanted =
                switch record.type {
                case .ptr: record.name == serviceType
                case .srv, .txt: record.name.parent == serviceType
                default: false
                }
            guard wanted else { continue }
            cache.insert(record, interfaceIndex: interfaceIndex, at: now, jitter: jitter)
            relevant = true
        }
        // Addresses after the SRV records, which may be in the same packet.
        let targets = hostNames()
        for record in records where record.recordClass == .internet && (record.type == .a || record.type == .aaaa) {
            guard targets.contains(record.name) else { continue }
            cache.insert(record, interfaceIndex: interfaceIndex, at: now, jitter: jitter)
            relevant = true
        }
        guard relevant else { return }
        lastAnswerAt = now
        reconcile()
        rescheduleCacheTimer()
    }

    /// Reports what changed since the last call: every instance with a PTR and SRV, TXT and an
    /// address is reported added or updated, and every reported one without is removed. Also
    /// sets which instances still need resolving.
    func reconcile() {
        let now = eventLoop.now
        let instances = Set(
            cache.entries(named: serviceType, type: .ptr).compactMap { entry -> DNSName? in
                guard case .ptr(let instance) = entry.record.data else { return nil }
                return instance
            })
        for instance in instances.union(reported.keys).sorted(by: { $0.description < $1.description }) {
            var service = instances.contains(instance) ? service(named: instance) : nil
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
                report(.added(service))
            case (let old?, let service?) where old != service:
                reported[instance] = service
                lastRemoval[instance] = nil
                report(.updated(service))
            case (let old?, nil):
                reported[instance] = nil
                report(.removed(instanceName: old.instanceName, reason: lastRemoval[instance] ?? .expired))
            default:
                break
            }
            if instances.contains(instance), service == nil {
                if resolving[instance] == nil { resolving[instance] = (now + timing.resolveDelay, 0) }
            } else {
                resolving[instance] = nil
            }
        }
        lastRemoval = lastRemoval.filter { instances.contains($0.key) }
        publishSnapshot()
        scheduleResolve()
    }

    /// The instance as far as the cache knows it; nil unless SRV, TXT and an address are known.
    private func service(named instance: DNSName) -> MDNSService? {
        guard let srv = newest(cache.entries(named: instance, type: .srv)),
              case .srv(_, _, let port, let target) = srv.record.data,
              let txt = newest(cache.entries(named: instance, type: .txt)) else { return nil }
        let addresses = addresses(of: target)
        guard !addresses.isEmpty else { return nil }
        let interfaces = cache.entries(named: serviceType, type: .ptr)
            .filter { $0.record.data == .ptr(instance) }.map(\.interfaceIndex) + [srv.interfaceIndex]
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

    /// The SRV targets of the instances known by PTR.
    private func hostNames() -> Set<DNSName> {
        var hosts = Set<DNSName>()
        for ptr in cache.entries(named: serviceType, type: .ptr) {
            guard case .ptr(let instance) = ptr.record.data else { continue }
            for srv in cache.entries(named: instance, type: .srv) {
                if case .srv(_, _, _, let target) = srv.record.data { hosts.insert(target) }
            }
        }
        return hosts
    }

    /// Notes why a record of an instance left, for the `removed` event it may cause.
    func noteRemoval(of entry: MDNSCache.Entry, reason: RemovalReason) {
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
    }
}
