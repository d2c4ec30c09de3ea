@testable import BatonDiscovery
import NIOCore
import NIOEmbedded
import Testing

private let instance: DNSName = "Living Room TV._baton._tcp.local."
private let host: DNSName = "tv-host.local."

/// A responder for `Living Room TV` on `host`, port 7000, probing at once (no random delay).
private func makeResponder(
    _ transport: FakeTransport, name: String = "Living Room TV", txt: [DNSTXTEntry] = [entry("id", "abc")]
) -> MDNSResponder {
    var timing = MDNSResponder.Timing()
    timing.probeDelay = .zero ... .zero
    timing.sharedAnswerDelay = .milliseconds(20) ... .milliseconds(20)
    return MDNSResponder(
        instanceName: name, port: 7000, txt: txt, hostName: host, messageTransport: transport, timing: timing)
}

/// Starts `responder` and lets probing and the first announcement happen.
private func announce(_ responder: MDNSResponder, _ transport: FakeTransport) -> EventLoopFuture<String> {
    let started = responder.start()
    transport.loop.run()
    transport.advance(750)
    return started
}

private func ptrQuery(unicast: Bool = false, known: [DNSResourceRecord] = [], id: UInt16 = 0) -> DNSMessage {
    DNSMessage(
        id: id, questions: [DNSQuestion(name: .batonService, type: .ptr, unicastResponse: unicast)], answers: known)
}

@Suite("mDNS responder")
struct MDNSResponderTests {
    @Test func probesThreeTimesAQuarterSecondApartThenAnnouncesTwiceASecondApart() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.loop.run()
        transport.advance(1_000 + 750 + 5_000)

        #expect(transport.sentTimes == [0, 250, 500, 750, 1_750])
        let probes = transport.sent.prefix(3).map(\.message)
        for (number, probe) in probes.enumerated() {
            #expect(!probe.isResponse)
            #expect(probe.questions.map(\.name) == [instance, host])
            #expect(probe.questions.allSatisfy { $0.type == .any })
            // Only the first asks for unicast answers.
            #expect(probe.questions.allSatisfy { $0.unicastResponse == (number == 0) })
            #expect(probe.authorities.map(\.type) == [.srv, .txt, .a])
            #expect(probe.answers.isEmpty)
        }
        for announcement in transport.sent.suffix(2).map(\.message) {
            #expect(announcement.isResponse && announcement.isAuthoritative)
            #expect(announcement.questions.isEmpty)
            #expect(announcement.answers.map(\.type) == [.ptr, .srv, .txt, .a, .ptr])
            #expect(announcement.answers[0].ttl == 4500 && !announcement.answers[0].cacheFlush)
            #expect(announcement.answers[1].cacheFlush && announcement.answers[1].ttl == 120)
            #expect(announcement.answers[3].data == .a([192, 168, 1, 20]))
            #expect(announcement.answers[4].name == .serviceTypeEnumeration)
        }
        #expect(transport.sent.allSatisfy { $0.destination == .multicast(interfaceIndex: 2, family: nil) })
        #expect(try started.wait() == "Living Room TV")
    }

    @Test func firstProbeWaitsUpToAQuarterSecond() {
        let transport = FakeTransport()
        let responder = MDNSResponder(
            instanceName: "TV", port: 1, hostName: host, messageTransport: transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(250)
        #expect(transport.sent.count == 1)
        #expect(transport.sentTimes.allSatisfy { (0...250).contains($0) })
    }

    @Test func aConflictingAnswerWhileProbingRenamesToTwo() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.loop.run()
        #expect(transport.sent.count == 1)

        // Another host already owns the name: its SRV points elsewhere.
        transport.deliver(
            DNSMessage(
                isResponse: true, isAuthoritative: true,
                answers: [
                    DNSResourceRecord(
                        name: instance, cacheFlush: true, ttl: 120,
                        data: .srv(priority: 0, weight: 0, port: 9000, target: "other.local."))
                ]))
        #expect(responder.instanceName == "Living Room TV (2)")
        transport.clearSent()
        transport.advance(750)
        #expect(transport.sent.count == 4)  // three probes and an announcement, all for the new name
        #expect(transport.sent[0].message.questions[0].name == "Living Room TV (2)._baton._tcp.local.")
        #expect(transport.sent[3].message.answers[0].data == .ptr("Living Room TV (2)._baton._tcp.local."))
        #expect(try started.wait() == "Living Room TV (2)")
    }

    @Test func ownProbesAndAnnouncementsComingBackAreNoConflict() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.loop.run()
        // Multicast loopback: we hear ourselves.
        transport.deliver(transport.sent[0].message, from: try SocketAddress(ipAddress: "192.168.1.20", port: 5353))
        transport.advance(750)
        transport.deliver(transport.sent[3].message, from: try SocketAddress(ipAddress: "192.168.1.20", port: 5353))
        transport.advance(5_000)
        #expect(responder.instanceName == "Living Room TV")
        #expect(try started.wait() == "Living Room TV")
        #expect(transport.sent.filter { !$0.message.isResponse }.count == 3)
    }

    @Test func simultaneousProbeWithEarlierDataIsIgnored() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        // Their SRV's port is lower, so their data is lexicographically earlier: we win.
        transport.deliver(probe(port: 6000))
        transport.advance(750)
        #expect(transport.sentTimes == [0, 250, 500, 750])
        #expect(transport.sent[3].message.isResponse)
        #expect(responder.instanceName == "Living Room TV")
    }

    @Test func simultaneousProbeWithLaterDataMakesUsWaitASecondAndProbeAgain() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = responder.start()
        transport.loop.run()
        transport.advance(100)
        transport.deliver(probe(port: 8000))  // later data: they win
        transport.advance(2_000)
        // Probing starts over a second after the loss, and completes, since the winner never
        // announced here.
        #expect(transport.sentTimes == [0, 1_100, 1_350, 1_600, 1_850])
        #expect(transport.sent.prefix(4).allSatisfy { !$0.message.isResponse })
        #expect(transport.sent[4].message.isResponse)
    }

    @Test func aConflictAfterAnnouncingProbesAgainAndRenamesIfTheOtherHostDefends() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        let theirs = DNSMessage(
            isResponse: true, isAuthoritative: true,
            answers: [DNSResourceRecord(name: instance, cacheFlush: true, ttl: 120, data: .txt(entries: [entry("x")]))])
        transport.deliver(theirs)
        transport.loop.run()
        #expect(responder.instanceName == "Living Room TV")
        #expect(transport.sent.first.map { !$0.message.isResponse } == true)  // probing again, same name
        #expect(transport.sent.first?.message.questions.first?.name == instance)
        transport.deliver(theirs)  // the other host answers our probe
        #expect(responder.instanceName == "Living Room TV (2)")
        // The records of the old name, announced before, are withdrawn.
        let goodbye = transport.sent.last?.message
        #expect(goodbye?.isResponse == true)
        #expect(goodbye?.answers.allSatisfy { $0.ttl == 0 } == true)
        #expect(goodbye?.answers.first?.data == .ptr(instance))
    }

    @Test func aPTRQueryGetsTheServiceWithSRVTXTAndAddressesAfterAShortDelay() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        transport.deliver(ptrQuery())
        transport.loop.run()
        #expect(transport.sent.isEmpty)  // a shared record: 20–120 ms later
        transport.advance(20)
        #expect(transport.sent.count == 1)
        let response = try #require(transport.sent.first)
        #expect(response.destination == .multicast(interfaceIndex: 2, family: .ipv4))
        #expect(response.message.isResponse && response.message.id == 0 && response.message.questions.isEmpty)
        #expect(response.message.answers.map(\.data) == [.ptr(instance)])
        #expect(
            response.message.additionals.map(\.type) == [.srv, .txt, .a, .nsec],
            "NSEC says the host has no AAAA")
        #expect(response.message.additionals[1].data.txtEntries == [entry("id", "abc")])
    }

    @Test func queriesWithinTheDelayAreAnsweredByOnePacket() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        transport.deliver(ptrQuery())
        transport.advance(10)
        transport.deliver(DNSMessage(questions: [DNSQuestion(name: .serviceTypeEnumeration, type: .ptr)]))
        transport.advance(100)
        #expect(transport.sent.count == 1)
        #expect(transport.sent.first?.message.answers.map(\.data) == [.ptr(instance), .ptr(.batonService)])
    }

    @Test func uniqueRecordsAreAnsweredAtOnce() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        transport.deliver(DNSMessage(questions: [DNSQuestion(name: instance, type: .srv)]))
        #expect(transport.sent.count == 1)
        #expect(transport.sent.first?.message.answers.map(\.type) == [.srv])
        #expect(transport.sent.first?.message.additionals.map(\.type) == [.a, .nsec])
    }

    @Test func aTypeWeLackIsAnsweredWithNSEC() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        transport.deliver(DNSMessage(questions: [DNSQuestion(name: host, type: .aaaa)]))
        let answer = try #require(transport.sent.first?.message.answers.first)
        #expect(answer.data == .nsec(next: host, types: [.a]))
    }

    @Test func knownAnswersWithHalfTheTTLLeftAreLeftOut() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        let known = DNSResourceRecord(name: .batonService, ttl: 2250, data: .ptr(instance))
        transport.deliver(ptrQuery(known: [known]))
        transport.advance(200)
        #expect(transport.sent.isEmpty)

        var stale = known
        stale.ttl = 2249  // under half of 4500: the asker needs it again
        transport.deliver(ptrQuery(known: [stale]))
        transport.advance(200)
        #expect(transport.sent.count == 1)
    }

    @Test func aQUQuestionIsAnsweredByUnicastWhenRecentlyMulticast() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        transport.deliver(DNSMessage(questions: [DNSQuestion(name: instance, type: .srv, unicastResponse: true)]))
        #expect(transport.sent.count == 1)
        #expect(transport.sent.first?.destination == .unicast(FakeTransport.peer))
        #expect(transport.sent.first?.message.answers.map(\.type) == [.srv])
    }

    @Test func aQUQuestionFromThisHostIsAnsweredByMulticast() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        // Another process on this host: a unicast reply might reach a third one instead.
        transport.deliver(
            DNSMessage(questions: [DNSQuestion(name: instance, type: .srv, unicastResponse: true)]),
            from: try SocketAddress(ipAddress: "192.168.1.20", port: 5353))
        #expect(transport.sent.first?.destination == .multicast(interfaceIndex: 2, family: .ipv4))
    }

    @Test func aLegacyUnicastQueryGetsItsIDQuestionsAndShortTTLs() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        let resolver = try SocketAddress(ipAddress: "192.168.1.50", port: 40_000)
        transport.deliver(ptrQuery(id: 0x1234), from: resolver)
        #expect(transport.sent.count == 1)  // at once: unicast needs no collision avoidance
        let reply = try #require(transport.sent.first)
        #expect(reply.destination == .unicast(resolver))
        #expect(reply.message.id == 0x1234)
        #expect(reply.message.questions == [DNSQuestion(name: .batonService, type: .ptr)])
        let records = reply.message.answers + reply.message.additionals
        #expect(records.map(\.type) == [.ptr, .srv, .txt, .a, .nsec])
        #expect(records.allSatisfy { $0.ttl <= 10 && !$0.cacheFlush })
    }

    @Test func aTruncatedQueryWaitsForTheRestOfItsKnownAnswers() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        var first = ptrQuery()
        first.isTruncated = true
        transport.deliver(first)
        transport.advance(300)
        transport.deliver(DNSMessage(answers: [DNSResourceRecord(name: .batonService, ttl: 4500, data: .ptr(instance))]))
        transport.advance(300)
        #expect(transport.sent.isEmpty)
    }

    @Test func stopSaysGoodbyeWithTTLZero() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.clearSent()
        let stopped = responder.stop()
        transport.loop.run()
        try stopped.wait()
        #expect(transport.sent.count == 1)
        let goodbye = try #require(transport.sent.first?.message)
        #expect(goodbye.isResponse)
        #expect(goodbye.answers.map(\.type) == [.ptr, .srv, .txt, .a])
        #expect(goodbye.answers.allSatisfy { $0.ttl == 0 })
        #expect(transport.listenerCount == 0)
        // Nothing more is sent or answered.
        transport.deliver(ptrQuery())
        transport.advance(10_000)
        #expect(transport.sent.count == 1)
    }

    @Test func stopWhileProbingSendsNothingAndFailsStart() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.loop.run()
        let stopped = responder.stop()
        transport.loop.run()
        try stopped.wait()
        #expect(throws: CancellationError.self) { try started.wait() }
        #expect(transport.sent.count == 1)  // the first probe only
    }

    @Test func updatingTXTAnnouncesTheNewRecord() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.advance(5_000)
        transport.clearSent()
        responder.update(txt: [entry("id", "abc"), entry("playing", "yes")])
        transport.loop.run()
        transport.advance(1_000)
        #expect(transport.sentTimes.count == 2)
        let txt = try #require(transport.sent.first?.message.answers.first { $0.type == .txt })
        #expect(txt.data.txtEntries == [entry("id", "abc"), entry("playing", "yes")])
    }

    @Test func anAnswerHeldDuringAnUpdateDoesNotCarryTheOldTXT() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.advance(5_000)
        transport.clearSent()
        transport.deliver(ptrQuery())
        responder.update(txt: [entry("id", "new")])
        transport.loop.run()
        transport.advance(2_000)
        let txts = transport.sent.flatMap { $0.message.answers + $0.message.additionals }.filter { $0.type == .txt }
        #expect(!txts.isEmpty)
        #expect(txts.allSatisfy { $0.data.txtEntries == [entry("id", "new")] })
        #expect(responder.instanceName == "Living Room TV")
    }

    @Test func aNewInterfaceMeansProbingAndAnnouncingAgainWithItsAddresses() throws {
        let transport = FakeTransport()
        let responder = makeResponder(transport)
        _ = try announce(responder, transport).wait()
        transport.advance(5_000)
        transport.clearSent()
        let wlan = MDNSInterface(
            index: 3, name: "wlan0", ipv4Addresses: [[10, 0, 0, 5]],
            ipv6Addresses: [[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]])
        transport.interfaces.append(wlan)
        transport.emit(.interfaceAdded(wlan))
        transport.loop.run()
        // Still answering on the old link meanwhile.
        transport.deliver(DNSMessage(questions: [DNSQuestion(name: instance, type: .srv)]))
        #expect(transport.sent.last?.message.isResponse == true)
        transport.advance(1_000)
        let onWLAN = transport.sent.filter { $0.destination == .multicast(interfaceIndex: 3, family: nil) }
        #expect(onWLAN.map { $0.message.isResponse } == [false, false, false, true])
        transport.advance(1_000)
        #expect(transport.sent.filter { $0.destination == .multicast(interfaceIndex: 3, family: nil) }.count == 5)
        #expect(
            onWLAN[3].message.answers.filter { $0.name == host }.map(\.data) == [
                .a([10, 0, 0, 5]), .aaaa([0xFE, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]),
            ])
        #expect(responder.instanceName == "Living Room TV")
    }

    @Test func withoutInterfacesProbingWaitsForOne() throws {
        let transport = FakeTransport(interfaces: [])
        let responder = makeResponder(transport)
        let started = responder.start()
        transport.advance(5_000)
        #expect(transport.sent.isEmpty)
        transport.interfaces = [FakeTransport.eth0]
        transport.emit(.interfaceAdded(FakeTransport.eth0))
        transport.advance(750)
        #expect(transport.sentTimes == [5_000, 5_250, 5_500, 5_750])
        #expect(try started.wait() == "Living Room TV")
    }

    @Test func namesAfterAConflict() {
        #expect(MDNSResponder.nextInstanceName(after: "Living Room TV") == "Living Room TV (2)")
        #expect(MDNSResponder.nextInstanceName(after: "Living Room TV (2)") == "Living Room TV (3)")
        #expect(MDNSResponder.nextInstanceName(after: "Room (9)") == "Room (10)")
        #expect(MDNSResponder.nextInstanceName(after: "(2)") == "(2) (2)")
        let long = String(repeating: "é", count: 40)  // 80 bytes
        let fitted = MDNSResponder.fitLabel(long)
        #expect(fitted.utf8.count == 62)
        let next = MDNSResponder.nextInstanceName(after: fitted)
        #expect(next.utf8.count <= 63 && next.hasSuffix(" (2)"))
        #expect(MDNSResponder.nextHostName(after: "baton-1a2b3c4d.local.") == "baton-1a2b3c4d-2.local.")
        #expect(MDNSResponder.nextHostName(after: "baton-1a2b3c4d-2.local.") == "baton-1a2b3c4d-3.local.")
    }

    @Test func aLongOrEmptyNameIsMadeValid() {
        let transport = FakeTransport()
        #expect(MDNSResponder(instanceName: "", port: 1, messageTransport: transport).instanceName == "Baton")
        let long = MDNSResponder(instanceName: String(repeating: "x", count: 100), port: 1, messageTransport: transport)
        #expect(long.instanceName.utf8.count == 63)
        #expect(long.hostName.description.hasPrefix("baton-"))
    }
}

/// Another host's probe for `Living Room TV` on `host`, proposing an SRV with `port`.
private func probe(port: UInt16) -> DNSMessage {
    DNSMessage(
        questions: [DNSQuestion(name: instance, type: .any, unicastResponse: true)],
        authorities: [
            DNSResourceRecord(
                name: instance, cacheFlush: true, ttl: 120, data: .srv(priority: 0, weight: 0, port: port, target: host)),
            DNSResourceRecord(name: instance, cacheFlush: true, ttl: 120, data: .txt(entries: [entry("id", "abc")])),
        ])
}
