import NIOCore

extension MDNSBrowser {
    /// The most bytes a query packet holds before its known answers go on in another packet
    /// (RFC 6762 §7.2); within an Ethernet MTU, so nothing is fragmented.
    static let maximumQuerySize = 1_400

    /// Multicasts the PTR query on the interfaces with the given indices (all when nil), listing
    /// the instances known there with over half their TTL left (§7.1).
    func sendQuery(on indices: [Int]?) {
        let now = eventLoop.now
        let question = DNSQuestion(name: serviceType, type: .ptr)
        for interface in transport.interfaces where indices?.contains(interface.index) ?? true {
            let known = cache.knownAnswers(named: serviceType, type: .ptr, interfaceIndex: interface.index, at: now)
            for message in Self.queryMessages(questions: [question], knownAnswers: known) {
                transport.send(message, to: .multicast(interfaceIndex: interface.index, family: nil))
            }
        }
    }

    /// Sends the one-shot query (RFC 6762 §5.1): the PTR question, from an ephemeral port, with a
    /// random ID, on every interface. Its replies are cached as hints (see ``MDNSCache``): they
    /// carry TTLs of at most 10 seconds (§6.7), so they never replace what multicast says, and
    /// the periodic queries, which do not list them as known answers, have them multicast with
    /// their real TTLs.
    func sendLegacyQuery() {
        guard timing.legacyQueryWindow > .zero else { return }
        let query = DNSMessage(id: .random(in: 1 ... .max), questions: [DNSQuestion(name: serviceType, type: .ptr)])
        transport.sendOneShotQuery(query, listeningFor: timing.legacyQueryWindow) { [weak self] received in
            self?.handleLegacyReply(received)
        }
    }

    /// A reply to the one-shot query: a response from port 5353 (RFC 6762 §6), with opcode and
    /// rcode 0 (§18).
    private func handleLegacyReply(_ received: MDNSReceivedMessage) {
        let message = received.message
        guard running, message.isResponse, message.opcode == 0, message.responseCode == 0,
              received.sourcePort == 5353 else { return }
        handleResponse(received, fromLegacyReply: true)
    }

    /// Schedules the next periodic query, the interval doubling after each up to the maximum.
    func scheduleNextQuery(after delay: TimeAmount) {
        queryTask?.cancel()
        queryTask = eventLoop.scheduleTask(in: delay) { [self] in
            sendQuery(on: nil)
            queryInterval = min(queryInterval * 2, timing.maximumQueryInterval)
            scheduleNextQuery(after: queryInterval)
        }
    }

    /// `questions` with `knownAnswers`, split over as many packets as needed: every packet but
    /// the last has the TC bit, and only the first has the questions (RFC 6762 §7.2).
    static func queryMessages(questions: [DNSQuestion], knownAnswers: [DNSResourceRecord]) -> [DNSMessage] {
        var messages: [DNSMessage] = []
        var remaining = knownAnswers[...]
        repeat {
            let questions = messages.isEmpty ? questions : []
            func packet(_ count: Int) -> DNSMessage {
                DNSMessage(questions: questions, answers: Array(remaining.prefix(count)))
            }
            // A record's size depends on compression against the rest of the packet, so the
            // most that fit is found by measuring: doubling, then halving.
            var fits = min(1, remaining.count)
            var tooMany = remaining.count + 1
            var probe = max(fits, 1)
            while probe < tooMany {
                if packet(probe).serialized().readableBytes <= maximumQuerySize {
                    fits = probe
                    probe = min(probe * 2, tooMany)
                    if probe == tooMany { break }
                } else {
                    tooMany = probe
                    break
                }
            }
            while tooMany - fits > 1 {
                let middle = (fits + tooMany) / 2
                if packet(middle).serialized().readableBytes <= maximumQuerySize {
                    fits = middle
                } else {
                    tooMany = middle
                }
            }
            var message = packet(fits)
            remaining = remaining.dropFirst(fits)
            message.isTruncated = !remaining.isEmpty
            messages.append(message)
        } while !remaining.isEmpty
        return messages
    }

    // MARK: - The cache's clock

    /// Makes sure the cache's next expiry or refresh has a timer.
    func rescheduleCacheTimer() {
        guard running else { return }
        let next = cache.nextDeadline
        guard next != cacheTaskDeadline else { return }
        cacheTask?.cancel()
        cacheTaskDeadline = next
        guard let next else {
            cacheTask = nil
            return
        }
        cacheTask = eventLoop.scheduleTask(deadline: next) { [self] in
            cacheTaskDeadline = nil
            cacheTick()
        }
    }

    /// Drops expired records and asks for those nearing expiry (§5.2): one query per interface
    /// holding every record due.
    private func cacheTick() {
        let now = eventLoop.now
        var affected = Set<DNSName>()
        for (entry, removal) in cache.removeExpired(at: now) {
            switch removal {
            case .goodbye: affected.formUnion(noteRemoval(of: entry, reason: .goodbye))
            case .expired: affected.formUnion(noteRemoval(of: entry, reason: .expired))
            case .interfaceRemoved: affected.formUnion(noteRemoval(of: entry, reason: .interfaceRemoved))
            case .flushed: affected.formUnion(noteRemoval(of: entry, reason: .expired))  // replaced, usually
            }
        }
        var questions: [Int: [DNSQuestion]] = [:]
        for entry in cache.dueRefreshes(at: now) {
            let question = DNSQuestion(name: entry.record.name, type: entry.record.type)
            if !questions[entry.interfaceIndex, default: []].contains(question) {
                questions[entry.interfaceIndex, default: []].append(question)
            }
        }
        for (index, questions) in questions.sorted(by: { $0.key < $1.key }) {
            transport.send(DNSMessage(questions: questions), to: .multicast(interfaceIndex: index, family: nil))
        }
        if !affected.isEmpty { reconcile(affected) }
        rescheduleCacheTimer()
    }

    // MARK: - Resolving

    /// Asks, on the interfaces its PTR came from, for what is missing of each instance whose
    /// time has come: SRV and TXT, or the host's addresses.
    func scheduleResolve() {
        guard running else { return }
        let next = resolving.values.map(\.next).min()
        guard next != resolveTaskDeadline else { return }
        resolveTask?.cancel()
        resolveTaskDeadline = next
        guard let next else {
            resolveTask = nil
            return
        }
        resolveTask = eventLoop.scheduleTask(deadline: next) { [self] in
            resolveTaskDeadline = nil
            resolveDue()
        }
    }

    private func resolveDue() {
        let now = eventLoop.now
        var questions: [Int: [DNSQuestion]] = [:]
        for (instance, state) in resolving where state.next <= now {
            let missing = missingQuestions(for: instance)
            let interfaces = Set(cache.entries(named: serviceType, data: .ptr(instance)).map(\.interfaceIndex))
            for index in interfaces {
                for question in missing where !questions[index, default: []].contains(question) {
                    questions[index, default: []].append(question)
                }
            }
            let backoff = min(timing.resolveRetryInterval * Int64(1 << min(state.attempts, 6)), .seconds(60))
            resolving[instance] = (now + backoff, state.attempts + 1)
        }
        for (index, questions) in questions.sorted(by: { $0.key < $1.key }) where !questions.isEmpty {
            transport.send(DNSMessage(questions: questions), to: .multicast(interfaceIndex: index, family: nil))
        }
        scheduleResolve()
    }

    /// The questions whose answers `instance` lacks.
    private func missingQuestions(for instance: DNSName) -> [DNSQuestion] {
        var questions: [DNSQuestion] = []
        let srv = newest(cache.entries(named: instance, type: .srv))
        if srv == nil { questions.append(DNSQuestion(name: instance, type: .srv)) }
        if newest(cache.entries(named: instance, type: .txt)) == nil {
            questions.append(DNSQuestion(name: instance, type: .txt))
        }
        if let srv, case .srv(_, _, _, let target) = srv.record.data, addresses(of: target).isEmpty {
            questions.append(DNSQuestion(name: target, type: .a))
            questions.append(DNSQuestion(name: target, type: .aaaa))
        }
        return questions
    }
}
