import NIOCore

extension MDNSResponder {
    /// Starts (or restarts) probing for the current names after `delay`.
    func startProbing(after delay: TimeAmount) {
        cancelTimers()
        phase = .probing
        probesSent = 0
        waitingForInterface = false
        probeTask = eventLoop.scheduleTask(in: delay) { [self] in sendProbe() }
    }

    /// One probe on every interface (RFC 6762 §8.1): ANY questions for the instance and host
    /// names, and in the authority section the records we mean to use (§8.2). Only the first
    /// probe asks for unicast answers: on a host where several processes share port 5353 a
    /// unicast answer reaches only one of them, and later probes make sure ours hears.
    func sendProbe() {
        guard !transport.interfaces.isEmpty else {
            // Nothing to probe on; an interface coming up starts probing over.
            probeTask = nil
            waitingForInterface = true
            return
        }
        let first = probesSent == 0
        for interface in transport.interfaces {
            let probe = DNSMessage(
                questions: [
                    DNSQuestion(name: instanceFullName, type: .any, unicastResponse: first),
                    DNSQuestion(name: host, type: .any, unicastResponse: first),
                ],
                authorities: [srvRecord, txtRecord] + addressRecords(for: interface.index))
            transport.send(probe, to: .multicast(interfaceIndex: interface.index, family: nil))
        }
        probesSent += 1
        probeTask = eventLoop.scheduleTask(in: timing.probeInterval) { [self] in
            if probesSent < timing.probeCount {
                sendProbe()
            } else {
                probingSucceeded()
            }
        }
    }

    func probingSucceeded() {
        probeTask = nil
        phase = .announced
        logger.debug("mDNS: probing done", metadata: ["instance": "\(instanceLabel)", "host": "\(host)"])
        announce(on: nil)
        scheduleReclaim()
        startPromise?.succeed(instanceLabel)
        startPromise = nil
    }

    /// Announces every record on the interfaces with the given indices (all when nil):
    /// ``Timing/announcementCount`` times, the interval doubling from
    /// ``Timing/announcementInterval`` (RFC 6762 §8.3).
    func announce(on indices: [Int]?) {
        hasAnnounced = true
        sendAnnouncement(on: indices, remaining: timing.announcementCount, interval: timing.announcementInterval)
    }

    private func sendAnnouncement(on indices: [Int]?, remaining: Int, interval: TimeAmount) {
        guard remaining > 0, phase == .announced else { return }
        for interface in transport.interfaces where indices?.contains(interface.index) ?? true {
            let announcement = DNSMessage(
                isResponse: true, isAuthoritative: true,
                answers: [ptrRecord, srvRecord, txtRecord] + addressRecords(for: interface.index)
                    + [serviceTypeRecord])
            sendMulticast(announcement, interfaceIndex: interface.index, family: nil)
        }
        guard remaining > 1 else { return }
        nextTaskID += 1
        let id = nextTaskID
        announcementTasks[id] = eventLoop.scheduleTask(in: interval) { [self] in
            announcementTasks[id] = nil
            sendAnnouncement(on: indices, remaining: remaining - 1, interval: interval * 2)
        }
    }

    /// Our records with TTL 0 on every interface (RFC 6762 §10.1). Not the service type
    /// enumeration PTR: other instances of the type on this host may still be there.
    func sendGoodbye() -> EventLoopFuture<Void> {
        var sent: [EventLoopFuture<Void>] = []
        for interface in transport.interfaces {
            var records = [ptrRecord, srvRecord, txtRecord] + addressRecords(for: interface.index)
            for index in records.indices { records[index].ttl = 0 }
            sent.append(
                transport.send(
                    DNSMessage(isResponse: true, isAuthoritative: true, answers: records),
                    to: .multicast(interfaceIndex: interface.index, family: nil)))
        }
        hasAnnounced = false
        return EventLoopFuture.andAllComplete(sent, on: eventLoop)
    }

    // MARK: - Conflicts

    /// A response: while probing, any record of a name we probe for that is not ours means the
    /// name is taken (§8.1); once announced, a record of the same name and type as one of ours
    /// with other data is a conflict (§9), and we probe again to find out. Once announced, a
    /// goodbye for our records is answered (§10.1) and, if renamed, what is said of the name
    /// asked for is noted.
    func handleResponse(_ received: MDNSReceivedMessage) {
        // RFC 6762 §6: responses from any other port are not mDNS responses.
        guard received.sourcePort == 5353 else { return }
        let message = received.message
        let records = message.answers + message.authorities + message.additionals
        if phase == .announced {
            if records.contains(where: isGoodbyeForOwnRecord) { defendAgainstGoodbye(from: received) }
            checkPreferredName(in: records)
        }
        let instance = instanceFullName
        for record in records where record.ttl > 0 && (record.name == instance || record.name == host) {
            guard !isOwnRecord(record) else { continue }
            switch phase {
            case .probing:
                logger.debug(
                    "mDNS: name taken while probing", metadata: ["name": "\(record.name)", "record": "\(record)"])
                nameTaken(record.name)
                return
            case .announced:
                let ourTypes = Set(uniqueRecords(named: record.name, interfaceIndex: nil).map(\.type))
                guard ourTypes.contains(record.type) else { continue }
                logger.info(
                    "mDNS: conflicting record seen, probing again",
                    metadata: ["name": "\(record.name)", "record": "\(record)"])
                startProbing(after: .zero)
                return
            case .idle, .stopped:
                return
            }
        }
        if phase == .announced {
            suppressDuplicateAnswers(seen: message.answers, on: received)
        }
    }

    /// A probe from another host for a name we are probing for (§8.2): the lexicographically
    /// later set of proposed records wins; the loser waits a second and probes again, by which
    /// time the winner has announced and the loser sees the name is taken. Our own probes come
    /// back identical and are ignored. Returns whether we lost.
    func handleSimultaneousProbe(_ received: MDNSReceivedMessage) -> Bool {
        let message = received.message
        for name in [instanceFullName, host] where message.questions.contains(where: { $0.name == name }) {
            let theirs = message.authorities.filter { $0.name == name }
            guard !theirs.isEmpty else { continue }
            let ours = uniqueRecords(named: name, interfaceIndex: received.interfaceIndex)
            if DNSResourceRecord.lexicographicOrder(of: ours, comparedTo: theirs) < 0 {
                logger.debug("mDNS: lost simultaneous probe tiebreak", metadata: ["name": "\(name)"])
                startProbing(after: timing.tiebreakDelay)
                return true
            }
        }
        return false
    }

    /// Moves to the next instance or host name and probes for it. After 15 conflicts in 10
    /// seconds it waits 5 seconds first (RFC 6762 §8.1).
    func nameTaken(_ name: DNSName) {
        if hasAnnounced {
            // Records of the old name sit in caches; they are no longer ours.
            _ = sendGoodbye()
        }
        let now = eventLoop.now
        recentConflicts = recentConflicts.filter { now - $0 < .seconds(10) } + [now]
        let delay: TimeAmount = recentConflicts.count >= 15 ? .seconds(5) : .random(in: timing.probeDelay)
        if name == host {
            host = Self.nextHostName(after: host)
        } else {
            instanceLabel = Self.nextInstanceName(after: instanceLabel, limit: Self.labelLimit(for: serviceType))
        }
        logger.info("mDNS: name in use, renaming", metadata: ["instance": "\(instanceLabel)", "host": "\(host)"])
        publishNames()
        startProbing(after: delay)
    }
}
