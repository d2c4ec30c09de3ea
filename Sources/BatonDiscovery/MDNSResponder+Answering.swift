import NIOCore

extension MDNSResponder {
    /// The TTL cap of answers to legacy unicast queriers (RFC 6762 §6.7).
    static let legacyUnicastTTL: UInt32 = 10

    /// A query. While probing, simultaneous probes matter; once announced, we answer, and go on
    /// answering while probing again after a link change or a conflict, as the names were ours.
    func handleQuery(_ received: MDNSReceivedMessage) {
        let message = received.message
        if phase == .announced { checkProbeForPreferredName(message) }
        if phase == .probing, !message.authorities.isEmpty, handleSimultaneousProbe(received) {
            return
        }
        guard phase == .announced || hasAnnounced else { return }
        // More known answers for a truncated query we are holding an answer for (§7.2).
        if message.questions.isEmpty {
            suppressKnownAnswers(message.answers, inPendingFor: received)
            return
        }

        var answers: [DNSResourceRecord] = []
        var hasShared = false
        for question in message.questions where question.recordClass == .internet || question.recordClass == .any {
            let (records, shared) = ownAnswers(to: question, interfaceIndex: received.interfaceIndex)
            for record in records where !answers.contains(where: { $0.isSameRecord(as: record) }) {
                answers.append(record)
            }
            hasShared = hasShared || (shared && !records.isEmpty)
        }
        answers.removeAll { Self.isKnown($0, in: message.answers) }
        guard !answers.isEmpty else { return }
        var additionals = additionalRecords(for: answers, interfaceIndex: received.interfaceIndex)
        additionals.removeAll { Self.isKnown($0, in: message.answers) }

        if received.sourcePort != 5353 {
            sendLegacyUnicastAnswer(to: received, answers: answers, additionals: additionals)
            return
        }
        let isProbe = !message.authorities.isEmpty
        let asksUnicast = !received.wasMulticast || message.questions.allSatisfy(\.unicastResponse)
        // A unicast answer to a querier on this very host would reach whichever process on
        // port 5353 the system picks, not necessarily the asker; a probe's answer is multicast
        // so that every prober hears it. Otherwise QU gets unicast unless the records have not
        // been multicast on that interface for a quarter of their TTL (§5.4).
        if asksUnicast, !isProbe, !isLocalAddress(received.source),
           answers.allSatisfy({ wasRecentlyMulticast($0, on: received.interfaceIndex) }) {
            transport.send(
                DNSMessage(isResponse: true, isAuthoritative: true, answers: answers, additionals: additionals),
                to: .unicast(received.source))
            return
        }
        let key = PendingKey(interfaceIndex: received.interfaceIndex, family: received.family)
        if hasShared || pendingResponses[key] != nil || message.isTruncated {
            hold(answers, additionals, for: key, truncated: message.isTruncated)
        } else {
            // Only unique records, which no one else may answer: at once (§6).
            sendMulticast(
                DNSMessage(isResponse: true, isAuthoritative: true, answers: answers, additionals: additionals),
                interfaceIndex: received.interfaceIndex, family: received.family)
        }
    }

    /// Our records answering `question`, and whether they are shared ones.
    private func ownAnswers(to question: DNSQuestion, interfaceIndex: Int?) -> ([DNSResourceRecord], shared: Bool) {
        let name = question.name
        let type = question.type
        if name == serviceType {
            return (type == .ptr || type == .any ? [ptrRecord] : [], true)
        }
        if name == .serviceTypeEnumeration {
            return (type == .ptr || type == .any ? [serviceTypeRecord] : [], true)
        }
        if name == instanceFullName || name == host {
            let own = uniqueRecords(named: name, interfaceIndex: interfaceIndex).filter { question.isAnswered(by: $0) }
            if !own.isEmpty { return (own, false) }
            // A type we do not have: say so (§6.1), so that the asker stops asking.
            return ([nsecRecord(for: name, interfaceIndex: interfaceIndex)], false)
        }
        return ([], false)
    }

    /// The records that save the asker another query (RFC 6763 §12): SRV, TXT and addresses
    /// with a PTR, addresses with an SRV; NSEC for a family the host lacks (RFC 6762 §6.2).
    private func additionalRecords(for answers: [DNSResourceRecord], interfaceIndex: Int?) -> [DNSResourceRecord] {
        var additionals: [DNSResourceRecord] = []
        let wantsService = answers.contains { $0.type == .ptr && $0.name == serviceType }
        let wantsHost = wantsService || answers.contains { $0.type == .srv }
        if wantsService {
            additionals += [srvRecord, txtRecord]
        }
        if wantsHost {
            let addresses = addressRecords(for: interfaceIndex)
            additionals += addresses
            if Set(addresses.map(\.type)).count < 2 {
                additionals.append(nsecRecord(for: host, interfaceIndex: interfaceIndex))
            }
        }
        return additionals.filter { record in !answers.contains { $0.isSameRecord(as: record) } }
    }

    /// Known-answer suppression (RFC 6762 §7.1): the asker has `record` if it listed it with at
    /// least half our TTL left.
    static func isKnown(_ record: DNSResourceRecord, in knownAnswers: [DNSResourceRecord]) -> Bool {
        knownAnswers.contains { $0.isSameRecord(as: record) && $0.ttl >= record.ttl / 2 }
    }

    /// Replies to a querier not on port 5353 (RFC 6762 §6.7): unicast, at once, with its query
    /// ID and questions, TTLs of at most 10 seconds, and no cache-flush bits (§10.2).
    private func sendLegacyUnicastAnswer(
        to received: MDNSReceivedMessage, answers: [DNSResourceRecord], additionals: [DNSResourceRecord]
    ) {
        func legacy(_ record: DNSResourceRecord) -> DNSResourceRecord {
            var record = record
            record.ttl = min(record.ttl, Self.legacyUnicastTTL)
            record.cacheFlush = false
            return record
        }
        let questions = received.message.questions.map {
            DNSQuestion(name: $0.name, type: $0.type, recordClass: $0.recordClass)
        }
        let reply = DNSMessage(
            id: received.message.id, isResponse: true, isAuthoritative: true, questions: questions,
            answers: answers.map(legacy), additionals: additionals.map(legacy))
        transport.send(reply, to: .unicast(received.source))
    }

    // MARK: - Held answers

    /// Adds to the answer held for `key`, holding one if there is none: 20–120 ms for shared
    /// records (§6), 400–500 ms when the query said more known answers follow (§7.2). Queries
    /// arriving meanwhile are answered by the same packet.
    private func hold(
        _ answers: [DNSResourceRecord], _ additionals: [DNSResourceRecord], for key: PendingKey, truncated: Bool
    ) {
        if var pending = pendingResponses[key] {
            for record in answers where !pending.answers.contains(where: { $0.isSameRecord(as: record) }) {
                pending.answers.append(record)
            }
            for record in additionals where !pending.additionals.contains(where: { $0.isSameRecord(as: record) }) {
                pending.additionals.append(record)
            }
            pendingResponses[key] = pending
            return
        }
        let delay = TimeAmount.random(in: truncated ? timing.truncatedQueryDelay : timing.sharedAnswerDelay)
        let task = eventLoop.scheduleTask(in: delay) { [self] in
            guard let pending = pendingResponses.removeValue(forKey: key), !pending.answers.isEmpty else { return }
            let additionals = pending.additionals.filter { record in
                !pending.answers.contains { $0.isSameRecord(as: record) }
            }
            sendMulticast(
                DNSMessage(isResponse: true, isAuthoritative: true, answers: pending.answers, additionals: additionals),
                interfaceIndex: key.interfaceIndex, family: key.family)
        }
        pendingResponses[key] = PendingResponse(answers: answers, additionals: additionals, task: task)
    }

    /// Drops held answers the asker of a truncated query has since listed (§7.2).
    private func suppressKnownAnswers(_ known: [DNSResourceRecord], inPendingFor received: MDNSReceivedMessage) {
        let key = PendingKey(interfaceIndex: received.interfaceIndex, family: received.family)
        guard var pending = pendingResponses[key] else { return }
        pending.answers.removeAll { Self.isKnown($0, in: known) }
        pendingResponses[key] = pending
    }

    /// Duplicate answer suppression (§7.4): another responder just multicast a record we were
    /// about to, with at least half our TTL.
    func suppressDuplicateAnswers(seen answers: [DNSResourceRecord], on received: MDNSReceivedMessage) {
        let key = PendingKey(interfaceIndex: received.interfaceIndex, family: received.family)
        guard var pending = pendingResponses[key] else { return }
        pending.answers.removeAll { Self.isKnown($0, in: answers) }
        pendingResponses[key] = pending
    }

    // MARK: - Sending

    /// Multicasts `message` on the interface (every interface when nil) and notes when its
    /// answers went out there.
    func sendMulticast(_ message: DNSMessage, interfaceIndex: Int?, family: MDNSAddressFamily?) {
        let indices = interfaceIndex.map { [$0] } ?? transport.interfaces.map(\.index)
        let now = eventLoop.now
        for index in indices {
            transport.send(message, to: .multicast(interfaceIndex: index, family: family))
            for record in message.answers {
                lastMulticast[RecordKey(record), default: [:]][index] = now
            }
        }
    }

    /// Whether `record` was multicast on the interface within the last quarter of its TTL.
    private func wasRecentlyMulticast(_ record: DNSResourceRecord, on interfaceIndex: Int?) -> Bool {
        guard let interfaceIndex, let sent = lastMulticast[RecordKey(record)]?[interfaceIndex] else { return false }
        return eventLoop.now - sent < .seconds(Int64(record.ttl / 4))
    }

    /// Whether `address` is one of this host's.
    private func isLocalAddress(_ address: SocketAddress) -> Bool {
        guard let bytes = Self.addressBytes(address) else { return false }
        if bytes.count == 4, bytes[0] == 127 { return true }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return transport.interfaces.contains { $0.ipv4Addresses.contains(bytes) || $0.ipv6Addresses.contains(bytes) }
    }

    /// The raw IP address of `address`, 4 or 16 bytes.
    static func addressBytes(_ address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let v4):
            var raw = v4.address.sin_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .v6(let v6):
            var raw = v6.address.sin6_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .unixDomainSocket:
            return nil
        }
    }
}
