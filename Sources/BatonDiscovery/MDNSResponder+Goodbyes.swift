import NIOCore

extension MDNSResponder {
    /// Whether `record`, received with TTL 0, is a goodbye for a record we still hold: the same
    /// name, type and data as one of ours, the PTRs included.
    func isGoodbyeForOwnRecord(_ record: DNSResourceRecord) -> Bool {
        record.ttl == 0
            && (isOwnRecord(record) || record.isSameRecord(as: ptrRecord)
                || record.isSameRecord(as: serviceTypeRecord))
    }

    /// Someone else said goodbye for records we still hold (our own goodbyes are sent only once
    /// the records are no longer ours): announce them again on that interface before browsers'
    /// one second runs out (RFC 6762 §10.1). At most once per
    /// ``Timing/goodbyeDefenseInterval`` per interface; goodbyes meanwhile are answered by the
    /// announcement already due.
    func defendAgainstGoodbye(from received: MDNSReceivedMessage) {
        let now = eventLoop.now
        let key = received.interfaceIndex
        if lastGoodbyeLog.map({ now - $0 >= .seconds(60) }) ?? true {
            lastGoodbyeLog = now
            logger.notice(
                "mDNS: goodbye for records we hold, from someone else; announcing them again (logged once a minute)",
                metadata: ["from": "\(received.source)", "instance": "\(instanceLabel)"])
        }
        guard goodbyeDefenseTasks[key] == nil else { return }
        let earliest = goodbyeDefenses[key].map { $0 + timing.goodbyeDefenseInterval } ?? now
        goodbyeDefenses[key] = max(earliest, now)
        goodbyeDefenseTasks[key] = eventLoop.scheduleTask(deadline: max(earliest, now)) { [self] in
            goodbyeDefenseTasks[key] = nil
            guard phase == .announced else { return }
            for interface in interfaces(for: key) {
                sendMulticast(
                    DNSMessage(
                        isResponse: true, isAuthoritative: true,
                        answers: [ptrRecord, srvRecord, txtRecord] + addressRecords(for: interface.index)
                            + [serviceTypeRecord]),
                    interfaceIndex: interface.index, family: nil)
            }
        }
    }
}
