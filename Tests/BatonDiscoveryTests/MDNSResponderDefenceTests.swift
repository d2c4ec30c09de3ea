@testable import BatonDiscovery
import NIOCore
import NIOEmbedded
import Testing

private let instance: DNSName = "Living Room TV._baton._tcp.local."
private let renamed: DNSName = "Living Room TV (2)._baton._tcp.local."
private let host: DNSName = "tv-host.local."
private let stranger = try! SocketAddress(ipAddress: "192.168.1.66", port: 5353)

/// A responder for `Living Room TV` on `host`, port 7000, probing at once.
private func makeResponder(_ transport: FakeTransport) -> MDNSResponder {
    var timing = MDNSResponder.Timing()
    timing.probeDelay = .zero ... .zero
    return MDNSResponder(
        instanceName: "Living Room TV", port: 7000, txt: [entry("id", "abc")], hostName: host,
        messageTransport: transport, timing: timing)
}

/// The stranger's claim on `name`: an SRV to its own host and port.
private func claim(_ name: DNSName = instance, ttl: UInt32 = 120) -> DNSMessage {
    DNSMessage(
        isResponse: true, isAuthoritative: true,
        answers: [
            DNSResourceRecord(
                name: name, cacheFlush: true, ttl: ttl, data: .srv(priority: 0, weight: 0, port: 9000, target: "evil.local."))
        ])
}

/// The records an announcement of `responder` carries, with TTL 0: a goodbye someone forged.
private func forgedGoodbye(of announcement: DNSMessage) -> DNSMessage {
    var records = announcement.answers
    for index in records.indices { records[index].ttl = 0 }
    return DNSMessage(isResponse: true, isAuthoritative: true, answers: records)
}

/// Announcements (responses with TTLs above 0) sent since `from`, holding the SRV of `name`.
private func announcements(_ transport: FakeTransport, of name: DNSName, from: Int = 0) -> [FakeTransport.Sent] {
    transport.sent[from...].filter { sent in
        sent.message.isResponse && sent.message.answers.contains { $0.name == name && $0.type == .srv && $0.ttl > 0 }
    }
}

@Suite("mDNS responder against a stranger: spoofed goodbyes, a hijacked name")
struct MDNSResponderDefenceTests {
    @Test func aGoodbyeSomeoneElseSendsForOurRecordsIsAnsweredByAnnouncingThemAgainAtOnce() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.loop.run()
        transport.advance(750)
        #expect(try started.wait() == "Living Room TV")
        transport.advance(10_000)  // both announcements are out
        let announcement = try #require(announcements(transport, of: instance).last?.message)
        let mark = transport.sent.count

        transport.deliver(forgedGoodbye(of: announcement), from: stranger)
        transport.advance(0)
        let answer = announcements(transport, of: instance, from: mark)
        #expect(answer.count == 1, "announced again at once, well within the browsers' second")
        let announcedAgain = Set((answer.first?.message.answers ?? []).map(DNSResourceRecordKey.init))
        #expect(announcedAgain.isSuperset(of: announcement.answers.map(DNSResourceRecordKey.init)))
        #expect(answer.first?.message.answers.allSatisfy { $0.ttl > 0 } == true)
        #expect(responder.instanceName == "Living Room TV")
    }

    @Test func aStreamOfForgedGoodbyesIsAnsweredAtMostFourTimesASecond() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        let announcement = try #require(announcements(transport, of: instance).last?.message)
        let mark = transport.sent.count
        // One forged goodbye every 10 ms for two seconds.
        for _ in 0..<200 {
            transport.deliver(forgedGoodbye(of: announcement), from: stranger)
            transport.advance(10)
        }
        let answers = announcements(transport, of: instance, from: mark)
        #expect(answers.count >= 7 && answers.count <= 9, "\(answers.count) in 2 s, one per 250 ms")
        // Each came within 250 ms of a goodbye: none waited long.
        #expect(zip(answers, answers.dropFirst()).allSatisfy { $1.time - $0.time >= .milliseconds(250) })
    }

    @Test func aGoodbyeForRecordsThatAreNotOursIsNotAnswered() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        let mark = transport.sent.count
        transport.deliver(claim(ttl: 0), from: stranger)  // an SRV of our name, but not ours
        transport.advance(1_000)
        #expect(transport.sent.count == mark)
    }

    @Test func aRenamedResponderTakesItsNameBackOnceTheStrangerStopsClaimingIt() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        // A stranger claims the name; we probe, it answers: we are renamed.
        transport.deliver(claim(), from: stranger)
        transport.deliver(claim(), from: stranger)
        #expect(responder.instanceName == "Living Room TV (2)")
        transport.advance(1_000)
        #expect(!announcements(transport, of: renamed).isEmpty)

        // Five seconds on, we probe for the name again; the stranger still answers.
        var mark = transport.sent.count
        transport.advance(4_900)
        let reclaim = transport.sent[mark...].filter { !$0.message.isResponse }
        #expect(reclaim.count == 1 && reclaim.first?.message.questions.first?.name == instance)
        #expect(reclaim.first?.message.authorities.allSatisfy { $0.name == instance } == true)
        transport.deliver(claim(), from: stranger)
        transport.advance(1_000)
        #expect(responder.instanceName == "Living Room TV (2)")

        // The stranger goes quiet: the next probes (10 s on, backing off) meet no claim.
        mark = transport.sent.count
        transport.advance(10_000)
        #expect(responder.instanceName == "Living Room TV")
        let after = transport.sent[mark...]
        #expect(after.filter { !$0.message.isResponse }.count == 3, "three probes")
        let goodbye = after.first { $0.message.isResponse && $0.message.answers.allSatisfy { $0.ttl == 0 } }
        #expect(goodbye?.message.answers.contains { $0.name == renamed } == true, "goodbye for the interim name")
        #expect(!announcements(transport, of: instance, from: mark).isEmpty, "the name announced again")

        // Renamed once and back once: no more probing.
        mark = transport.sent.count
        transport.advance(60_000)
        #expect(transport.sent[mark...].allSatisfy { $0.message.isResponse })
    }

    @Test func aGoodbyeFromTheHolderBringsTheProbeForward() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        transport.deliver(claim(), from: stranger)
        transport.deliver(claim(), from: stranger)
        transport.advance(1_000)
        #expect(responder.instanceName == "Living Room TV (2)")
        transport.deliver(claim(ttl: 0), from: stranger)
        transport.advance(1_000)
        #expect(responder.instanceName == "Living Room TV")
    }

    @Test func aReclaimLosingTheTiebreakToAnotherHostsProbeKeepsUsRenamed() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        transport.deliver(claim(), from: stranger)
        transport.deliver(claim(), from: stranger)
        transport.advance(5_900)  // our first reclaim probe is out
        transport.deliver(
            DNSMessage(
                questions: [DNSQuestion(name: instance, type: .any)],
                authorities: claim().answers),
            from: stranger)
        transport.advance(1_000)
        #expect(responder.instanceName == "Living Room TV (2)", "their SRV against our TXT: we lose (§8.2)")
    }

    @Test func aReclaimWinningTheTiebreakTakesTheNameBack() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(10_750)
        transport.deliver(claim(), from: stranger)
        transport.deliver(claim(), from: stranger)
        transport.advance(5_900)  // our first reclaim probe is out
        // An earlier set than ours: a TXT that sorts before our `id=abc`.
        let earlier = DNSResourceRecord(name: instance, cacheFlush: true, ttl: 120, data: .txt(entries: [entry("a", "a")]))
        transport.deliver(
            DNSMessage(questions: [DNSQuestion(name: instance, type: .any)], authorities: [earlier]), from: stranger)
        transport.advance(1_000)
        #expect(responder.instanceName == "Living Room TV")
    }
}

/// A record's name, type and data, to compare records whatever their TTL.
private struct DNSResourceRecordKey: Hashable {
    var name: DNSName
    var data: DNSRecordData

    init(_ record: DNSResourceRecord) {
        name = record.name
        data = record.data
    }
}
