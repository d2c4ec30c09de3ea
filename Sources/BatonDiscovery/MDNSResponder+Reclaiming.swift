import NIOCore

/// Going back to the name asked for once a conflict is over: a stranger (or a second device) that
/// held the name made the responder rename itself; while renamed and announced it probes for the
/// preferred name now and then, as it would for a new name (RFC 6762 §8.1), and when three probes
/// meet no claim, says goodbye for the interim name and announces the preferred one.
extension MDNSResponder {
    /// The preferred instance's full name.
    var preferredFullName: DNSName {
        DNSName(labels: [Array(preferredLabel.utf8)])!.appending(serviceType)!
    }

    /// The SRV and TXT records the preferred name would have: what a reclaim probe proposes.
    var preferredRecords: [DNSResourceRecord] {
        let name = preferredFullName
        return [
            DNSResourceRecord(
                name: name, cacheFlush: true, ttl: timing.recordTTL,
                data: .srv(priority: 0, weight: 0, port: port, target: host)),
            DNSResourceRecord(name: name, cacheFlush: true, ttl: timing.recordTTL, data: .txt(entries: txt)),
        ]
    }

    /// Whether the responder goes by another name than the one asked for.
    var isRenamed: Bool { instanceLabel != preferredLabel }

    /// Schedules the next probe for the preferred name, if renamed and announced: after
    /// ``Timing/reclaimInterval``, doubled for each probe that found it taken.
    func scheduleReclaim() {
        cancelReclaim()
        guard phase == .announced, isRenamed else { return }
        let doubled = timing.reclaimInterval * Int64(1 << min(reclaimFailures, 16))
        reclaimTask = eventLoop.scheduleTask(in: min(doubled, timing.maximumReclaimInterval)) { [self] in
            sendReclaimProbe()
        }
    }

    func cancelReclaim() {
        reclaimTask?.cancel()
        reclaimTask = nil
        reclaimProbesSent = 0
    }

    /// One of the three probes for the preferred name, on every interface; after the third,
    /// with no claim seen, the name is ours again.
    private func sendReclaimProbe() {
        guard phase == .announced, isRenamed else { return }
        for interface in transport.interfaces {
            let probe = DNSMessage(
                questions: [DNSQuestion(name: preferredFullName, type: .any)], authorities: preferredRecords)
            transport.send(probe, to: .multicast(interfaceIndex: interface.index, family: nil))
        }
        reclaimProbesSent += 1
        reclaimTask = eventLoop.scheduleTask(in: timing.probeInterval) { [self] in
            if reclaimProbesSent < timing.probeCount {
                sendReclaimProbe()
            } else {
                reclaimed()
            }
        }
    }

    /// The preferred name is free: goodbye for the interim name's records, then the preferred
    /// name's announcements.
    private func reclaimed() {
        reclaimTask = nil
        reclaimProbesSent = 0
        reclaimFailures = 0
        let interim = instanceLabel
        _ = sendGoodbye()
        cancelTimers()  // held answers carry the interim name
        instanceLabel = preferredLabel
        logger.notice(
            "mDNS: name free again; going back to it", metadata: ["instance": "\(instanceLabel)", "was": "\(interim)"])
        publishNames()
        announce(on: nil)
    }

    /// A response while renamed: a record of the preferred name that is not what we propose
    /// means it is still held (the reclaim under way fails); a goodbye for it brings the next
    /// probe forward.
    func checkPreferredName(in records: [DNSResourceRecord]) {
        guard phase == .announced, isRenamed else { return }
        let name = preferredFullName
        let proposed = preferredRecords
        for record in records where record.name == name && !proposed.contains(where: { $0.isSameRecord(as: record) }) {
            if record.ttl > 0 {
                if reclaimProbesSent > 0 { reclaimFailed() }
                return
            }
        }
        guard reclaimProbesSent == 0, records.contains(where: { $0.name == name && $0.ttl == 0 }) else { return }
        let now = eventLoop.now
        guard lastReclaimNudge.map({ now - $0 >= timing.reclaimInterval }) ?? true else { return }
        lastReclaimNudge = now
        cancelReclaim()
        reclaimTask = eventLoop.scheduleTask(in: .random(in: timing.probeDelay)) { [self] in sendReclaimProbe() }
    }

    /// A query while reclaiming: another host probing for the preferred name at the same time
    /// is tiebroken as RFC 6762 §8.2 says (the later records win), so that two renamed devices
    /// do not fail in step for ever; if it wins, our reclaim fails. Our own probes come back
    /// identical, which is no conflict.
    func checkProbeForPreferredName(_ message: DNSMessage) {
        guard reclaimProbesSent > 0, !message.authorities.isEmpty else { return }
        let name = preferredFullName
        guard message.questions.contains(where: { $0.name == name }) else { return }
        let theirs = message.authorities.filter { $0.name == name }
        guard !theirs.isEmpty else { return }
        if DNSResourceRecord.lexicographicOrder(of: preferredRecords, comparedTo: theirs) < 0 {
            reclaimFailed()
        }
    }

    private func reclaimFailed() {
        reclaimFailures += 1
        logger.debug("mDNS: the name asked for is still taken", metadata: ["name": "\(preferredLabel)"])
        scheduleReclaim()
    }
}
