@testable import BatonDiscovery
import NIOCore
import NIOEmbedded
import Testing

private let instance: DNSName = "Kitchen._baton._tcp.local."
private let host: DNSName = "kitchen-host.local."

private func ptr(ttl: UInt32 = 4500, _ target: DNSName = instance) -> DNSResourceRecord {
    DNSResourceRecord(name: .batonService, ttl: ttl, data: .ptr(target))
}

private func srv(ttl: UInt32 = 120, port: UInt16 = 7000, _ name: DNSName = instance) -> DNSResourceRecord {
    DNSResourceRecord(name: name, cacheFlush: true, ttl: ttl, data: .srv(priority: 0, weight: 0, port: port, target: host))
}

private func txt(ttl: UInt32 = 120, _ entries: [DNSTXTEntry] = [entry("id", "k1")], _ name: DNSName = instance)
    -> DNSResourceRecord
{
    DNSResourceRecord(name: name, cacheFlush: true, ttl: ttl, data: .txt(entries: entries))
}

private func a(ttl: UInt32 = 120, _ address: [UInt8] = [192, 168, 1, 30]) -> DNSResourceRecord {
    DNSResourceRecord(name: host, cacheFlush: true, ttl: ttl, data: .a(address))
}

private func response(_ answers: [DNSResourceRecord], additionals: [DNSResourceRecord] = []) -> DNSMessage {
    DNSMessage(isResponse: true, isAuthoritative: true, answers: answers, additionals: additionals)
}

/// A started browser on `transport`, its events going to the returned recorder.
private func startBrowser(_ transport: FakeTransport) -> (MDNSBrowser, EventRecorder) {
    let recorder = EventRecorder()
    let browser = MDNSBrowser(messageTransport: transport, onEvent: { recorder.record($0) })
    browser.start()
    transport.loop.run()
    return (browser, recorder)
}

@Suite("mDNS browser")
struct MDNSBrowserTests {
    @Test func queriesAtOnceThenAfterIntervalsDoublingFromOneSecond() {
        let transport = FakeTransport()
        _ = startBrowser(transport)
        #expect(transport.sentTimes == [0])
        transport.advance(31_500)
        #expect(transport.sentTimes == [0, 1_000, 3_000, 7_000, 15_000, 31_000])
        let query = transport.sent[0].message
        #expect(!query.isResponse)
        #expect(query.questions == [DNSQuestion(name: .batonService, type: .ptr)])
        #expect(transport.sent[0].destination == .multicast(interfaceIndex: 2, family: nil))
    }

    @Test func theIntervalStopsDoublingAtAnHour() {
        let transport = FakeTransport()
        _ = startBrowser(transport)
        transport.loop.advanceTime(by: .hours(10))
        let gaps = zip(transport.sentTimes.dropFirst(), transport.sentTimes).map { $0 - $1 }
        #expect(gaps.max() == 3_600_000)
        #expect(gaps.filter { $0 == 3_600_000 }.count >= 2)
    }

    @Test func aCompleteAnswerIsAddedThenEnumerationCompletes() throws {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        transport.advance(60)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        let events = recorder.take()
        let service = MDNSService(
            instanceName: "Kitchen", fullName: instance, hostName: host, port: 7000,
            addresses: [MDNSServiceAddress(bytes: [192, 168, 1, 30], interfaceIndex: 2)], txt: [entry("id", "k1")],
            interfaceIndices: [2])
        #expect(events == [.added(service)])
        #expect(browser.services["Kitchen"] == service)
        transport.advance(290)
        #expect(recorder.take() == [.enumerationCompleted])
    }

    @Test func enumerationCompletesAtAQuarterSecondWhenNothingAnswers() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.advance(249)
        #expect(recorder.events.isEmpty)
        transport.advance(1)
        #expect(recorder.take() == [.enumerationCompleted])
        transport.advance(10_000)
        #expect(recorder.events.isEmpty)
    }

    @Test func enumerationWaitsForAHalfResolvedInstanceButNoLongerThanASecond() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()]))
        transport.advance(999)
        #expect(recorder.events.isEmpty)
        transport.advance(1)
        #expect(recorder.take() == [.enumerationCompleted])
    }

    @Test func onlyAFullyKnownInstanceIsAddedAndWhatIsMissingIsAskedFor() throws {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.clearSent()
        transport.deliver(response([ptr()]))
        #expect(recorder.events.isEmpty)
        transport.advance(20)
        #expect(
            transport.sent.last?.message.questions == [
                DNSQuestion(name: instance, type: .srv), DNSQuestion(name: instance, type: .txt),
            ])
        transport.deliver(response([srv(), txt()]))
        #expect(recorder.events.isEmpty)
        transport.advance(1_000)
        #expect(
            transport.sent.last?.message.questions == [
                DNSQuestion(name: host, type: .a), DNSQuestion(name: host, type: .aaaa),
            ])
        transport.deliver(response([a()]))
        #expect(recorder.take().last.map { if case .added = $0 { true } else { false } } == true)
    }

    @Test func laterQueriesListKnownAnswers() {
        let transport = FakeTransport()
        _ = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(1_000)
        let query = transport.sent.last?.message
        #expect(query?.questions == [DNSQuestion(name: .batonService, type: .ptr)])
        #expect(query?.answers.map(\.data) == [.ptr(instance)])
        #expect(query?.answers.first.map { $0.ttl > 2250 && $0.ttl <= 4500 } == true)
    }

    @Test func manyKnownAnswersAreSplitOverTruncatedPackets() {
        let known = (0..<200).map { ptr(DNSName("Device number \($0)._baton._tcp.local.")!) }
        let messages = MDNSBrowser.queryMessages(
            questions: [DNSQuestion(name: .batonService, type: .ptr)], knownAnswers: known)
        #expect(messages.count > 1)
        #expect(messages.dropLast().allSatisfy { $0.isTruncated })
        #expect(messages.last?.isTruncated == false)
        #expect(messages.first?.questions.count == 1)
        #expect(messages.dropFirst().allSatisfy { $0.questions.isEmpty })
        #expect(messages.flatMap(\.answers) == known)
        #expect(messages.allSatisfy { $0.serialized().readableBytes <= MDNSBrowser.maximumQuerySize })
    }

    @Test func aGoodbyeRemovesTheInstanceOneSecondLater() {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(5_000)
        _ = recorder.take()
        transport.deliver(response([ptr(ttl: 0), srv(ttl: 0), txt(ttl: 0), a(ttl: 0)]))
        transport.advance(999)
        #expect(recorder.events.isEmpty)
        transport.advance(1)
        #expect(recorder.take() == [.removed(instanceName: "Kitchen", reason: .goodbye)])
        #expect(browser.services.isEmpty)
    }

    @Test func recordsAreRefreshedNearTheirExpiryAndTheInstanceRemovedIfNobodyAnswers() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        _ = recorder.take()
        transport.clearSent()
        transport.advance(95_900)  // 80 % of 120 s is 96 s
        #expect(transport.sent.allSatisfy { $0.message.questions == [DNSQuestion(name: .batonService, type: .ptr)] })
        transport.advance(2_500)
        let refresh = transport.sent.last?.message.questions ?? []
        #expect(Set(refresh.map(\.type)) == [.srv, .txt, .a])
        let refreshes = transport.sent.filter { $0.message.questions.contains { $0.type == .srv } }
        transport.advance(21_500)  // to 119.9 s
        let allRefreshes = transport.sent.filter { $0.message.questions.contains { $0.type == .srv } }
        #expect(refreshes.count == 1)
        #expect(allRefreshes.count == 4, "at 80, 85, 90 and 95 %")
        _ = recorder.take()
        transport.advance(100)
        #expect(recorder.take() == [.removed(instanceName: "Kitchen", reason: .expired)])
    }

    @Test func anAnswerBeforeExpiryKeepsTheInstance() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        _ = recorder.take()
        transport.advance(100_000)
        transport.deliver(response([srv(), txt(), a()]))
        transport.advance(100_000)
        #expect(recorder.take().filter { if case .removed = $0 { true } else { false } }.isEmpty)
    }

    @Test func aTXTChangeIsAnUpdate() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(3_000)
        _ = recorder.take()
        transport.deliver(response([txt([entry("id", "k1"), entry("playing", "jazz")])]))
        let events = recorder.take()
        #expect(events.count == 1)
        guard case .updated(let service) = events.first else {
            Issue.record("expected an update, got \(events)")
            return
        }
        #expect(service.txtValue("playing") == "jazz")
        // The flushed old TXT leaves a second later without another event.
        transport.advance(1_500)
        #expect(recorder.events.isEmpty)
    }

    @Test func aNewAddressWithTheCacheFlushBitReplacesTheOld() {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(3_000)
        _ = recorder.take()
        transport.deliver(response([a([192, 168, 1, 31])]))
        transport.advance(1_000)
        #expect(recorder.take().count == 2)  // the new address, then the old one gone
        #expect(browser.services["Kitchen"]?.addresses.map(\.bytes) == [[192, 168, 1, 31]])
    }

    @Test func responsesToOtherQueriersAreUsedToo() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.advance(2_000)
        _ = recorder.take()
        // Unsolicited: an announcement, or an answer to someone else.
        transport.deliver(response([ptr(), srv(), txt(), a()]))
        #expect(recorder.take().count == 1)
    }

    @Test func responsesFromAnotherPortAndOtherTypesAreIgnored() throws {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(
            response([ptr(), srv(), txt(), a()]), from: try SocketAddress(ipAddress: "192.168.1.99", port: 1234))
        let other: DNSName = "Printer._ipp._tcp.local."
        transport.deliver(
            response([
                DNSResourceRecord(name: "_ipp._tcp.local.", ttl: 4500, data: .ptr(other)), srv(other), txt([], other), a(),
            ]))
        transport.advance(200)
        #expect(recorder.events.isEmpty)
    }

    @Test func losingTheInterfaceRemovesWhatWasLearnedThere() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(3_000)
        _ = recorder.take()
        transport.interfaces = []
        transport.emit(.interfaceRemoved(FakeTransport.eth0))
        #expect(recorder.take() == [.removed(instanceName: "Kitchen", reason: .interfaceRemoved)])
    }

    @Test func aNewInterfaceIsQueriedAtOnce() {
        let transport = FakeTransport()
        _ = startBrowser(transport)
        transport.advance(10_000)
        transport.clearSent()
        let wlan = MDNSInterface(index: 3, name: "wlan0", ipv4Addresses: [[10, 0, 0, 5]])
        transport.interfaces.append(wlan)
        transport.emit(.interfaceAdded(wlan))
        #expect(transport.sent.map(\.destination) == [.multicast(interfaceIndex: 3, family: nil)])
        transport.advance(1_000)  // and the schedule starts over
        #expect(transport.sentTimes.count == 3)
    }

    @Test func theSameInstanceOnTwoInterfacesIsOneServiceWithBoth() {
        let wlan = MDNSInterface(index: 3, name: "wlan0", ipv4Addresses: [[10, 0, 0, 5]])
        let transport = FakeTransport(interfaces: [FakeTransport.eth0, wlan])
        let (browser, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a([10, 0, 0, 9])]), interfaceIndex: 3)
        #expect(recorder.events.count == 2)
        let service = browser.services["Kitchen"]
        #expect(service?.interfaceIndices == [2, 3])
        #expect(
            service?.addresses == [
                MDNSServiceAddress(bytes: [10, 0, 0, 9], interfaceIndex: 3),
                MDNSServiceAddress(bytes: [192, 168, 1, 30], interfaceIndex: 2),
            ])
    }

    @Test func anInstanceSpelledInAnotherCaseKeepsTheNameFirstReported() {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(3_000)
        _ = recorder.take()
        let shouted: DNSName = "KITCHEN._baton._tcp.local."
        transport.deliver(response([ptr(shouted)], additionals: [srv(port: 7001, shouted), txt([entry("id", "k1")], shouted)]))
        #expect(recorder.take().map { if case .updated(let service) = $0 { service.instanceName } else { "" } } == ["Kitchen"])
    }

    @Test func stopFinishesTheStreamAndStopsQuerying() async throws {
        let transport = FakeTransport()
        let (browser, _) = startBrowser(transport)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        let stopped = browser.stop()
        transport.loop.run()
        try await stopped.get()
        var events: [MDNSBrowser.Event] = []
        for await event in browser.events { events.append(event) }
        #expect(events.count == 1)
        transport.clearSent()
        transport.advance(100_000)
        #expect(transport.sent.isEmpty)
        #expect(transport.listenerCount == 0)
    }
}

/// A legacy unicast reply (RFC 6762 §6.7) to `query`: its ID and question, TTLs capped at 10 s
/// and no cache-flush bits.
private func legacyReply(to query: DNSMessage, _ answers: [DNSResourceRecord], additionals: [DNSResourceRecord] = [])
    -> DNSMessage
{
    func capped(_ record: DNSResourceRecord) -> DNSResourceRecord {
        var record = record
        record.ttl = min(record.ttl, 10)
        record.cacheFlush = false
        return record
    }
    return DNSMessage(
        id: query.id, isResponse: true, isAuthoritative: true, questions: query.questions,
        answers: answers.map(capped), additionals: additionals.map(capped))
}

private extension [MDNSBrowser.Event] {
    var removals: [MDNSBrowser.Event] { filter { if case .removed = $0 { true } else { false } } }
}

@Suite("mDNS browser: the one-shot query at the start")
struct MDNSBrowserOneShotQueryTests {
    @Test func startSendsOneOneShotPTRQueryWithAnIDListeningForTheWindow() throws {
        let transport = FakeTransport()
        _ = startBrowser(transport)
        transport.advance(60_000)
        #expect(transport.oneShots.count == 1)
        let oneShot = try #require(transport.oneShots.first)
        #expect(oneShot.time == transport.start)
        #expect(oneShot.duration == MDNSBrowser.Timing().legacyQueryWindow)
        #expect(!oneShot.message.isResponse)
        #expect(oneShot.message.id != 0, "a unicast DNS reply is matched by its ID")
        #expect(oneShot.message.questions == [DNSQuestion(name: .batonService, type: .ptr)])
        #expect(oneShot.message.answers.isEmpty)
    }

    @Test func noOneShotQueryWhenItsWindowIsZero() {
        let transport = FakeTransport()
        var timing = MDNSBrowser.Timing()
        timing.legacyQueryWindow = .zero
        let browser = MDNSBrowser(messageTransport: transport, timing: timing)
        browser.start()
        transport.loop.run()
        #expect(transport.oneShots.isEmpty)
        #expect(transport.sentTimes == [0])
    }

    @Test func aLegacyReplyAddsTheInstanceBeforeEnumerationCompletes() throws {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        transport.advance(5)
        #expect(transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()])))
        transport.advance(1_000)
        let events = recorder.take()
        #expect(events.count == 2)
        #expect(events.first?.added?.instanceName == "Kitchen")
        #expect(events.first?.added?.port == 7000)
        #expect(events.last == .enumerationCompleted)
        #expect(browser.services["Kitchen"] != nil)
    }

    @Test func aLegacyReplyFromAPortOtherThan5353IsIgnored() throws {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        let elsewhere = try SocketAddress(ipAddress: "192.168.1.99", port: 40_000)
        transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()]), from: elsewhere)
        transport.advance(1_000)
        #expect(recorder.take() == [.enumerationCompleted])
    }

    @Test func aLegacyReplyDoesNotShortenWhatMulticastSaid() throws {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()]))
        transport.clearSent()
        transport.advance(60_000)
        #expect(recorder.take().removals.isEmpty)
        #expect(browser.services["Kitchen"] != nil)
        // Nothing was asked again early, as if the records had 10 seconds to live.
        #expect(transport.sent.allSatisfy { $0.message.questions == [DNSQuestion(name: .batonService, type: .ptr)] })
    }

    @Test func whatOnlyALegacyReplySaidIsNotAKnownAnswerSoTheNextQueryHasItMulticast() throws {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()]))
        transport.clearSent()
        transport.advance(1_000)
        let second = try #require(transport.sent.last?.message)
        #expect(second.questions == [DNSQuestion(name: .batonService, type: .ptr)])
        #expect(second.answers.isEmpty)
        // The multicast answer, real TTLs and all, takes over: no removal when 10 s are up.
        transport.advance(100)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(60_000)
        let events = recorder.take()
        #expect(events.removals.isEmpty)
        #expect(events.filter { if case .updated = $0 { true } else { false } }.isEmpty)
        #expect(browser.services["Kitchen"] != nil)
        // Once multicast confirmed it, the PTR is a known answer again.
        #expect(transport.sent.last?.message.answers.map(\.data) == [.ptr(instance)])
    }

    @Test func whatOnlyALegacyReplySaidIsAskedForBeforeItsTenSecondsRunOut() throws {
        let transport = FakeTransport()
        var timing = MDNSBrowser.Timing()
        timing.initialQueryInterval = .seconds(60)  // so that only the cache's refreshes ask
        let recorder = EventRecorder()
        let browser = MDNSBrowser(messageTransport: transport, timing: timing, onEvent: { recorder.record($0) })
        browser.start()
        transport.loop.run()
        let query = try #require(transport.oneShots.first?.message)
        transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()]))
        transport.clearSent()
        transport.advance(8_300)
        let refresh = Set(transport.sent.flatMap(\.message.questions).map(\.type))
        #expect(refresh == [.ptr, .srv, .txt, .a])
        #expect(transport.sent.allSatisfy { $0.destination == .multicast(interfaceIndex: 2, family: nil) })
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.advance(30_000)
        #expect(recorder.take().removals.isEmpty)
    }

    @Test func aGoodbyeInALegacyReplyIsIgnored() throws {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        transport.deliver(response([ptr()], additionals: [srv(), txt(), a()]))
        transport.replyToOneShot(legacyReply(to: query, [ptr(ttl: 0)]))
        transport.advance(5_000)
        #expect(recorder.take().removals.isEmpty)
        #expect(browser.services["Kitchen"] != nil)
    }

    @Test func repliesAfterTheWindowOrWithAnotherIDAreNotHandedOn() throws {
        let transport = FakeTransport()
        let (_, recorder) = startBrowser(transport)
        let query = try #require(transport.oneShots.first?.message)
        var other = legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()])
        other.id &+= 1
        #expect(!transport.replyToOneShot(other))
        transport.advance(1_000)
        #expect(!transport.replyToOneShot(legacyReply(to: query, [ptr()], additionals: [srv(), txt(), a()])))
        #expect(recorder.take() == [.enumerationCompleted])
    }
}
