@testable import BatonDiscovery
import NIOCore
import NIOEmbedded
import Testing

private let kitchen: DNSName = "Kitchen._baton._tcp.local."
private let kitchenHost: DNSName = "kitchen-host.local."
private let kitchenAddress = try! SocketAddress(ipAddress: "192.168.1.30", port: 5353)
private let stranger = try! SocketAddress(ipAddress: "192.168.1.66", port: 5353)

/// The four records of an instance: PTR, SRV, TXT with an id, A; with `ttl` throughout.
private func records(_ instance: DNSName, host: DNSName, port: UInt16, ttl: UInt32, address: [UInt8]) -> [DNSResourceRecord] {
    [
        DNSResourceRecord(name: .batonService, ttl: ttl, data: .ptr(instance)),
        DNSResourceRecord(
            name: instance, cacheFlush: true, ttl: ttl, data: .srv(priority: 0, weight: 0, port: port, target: host)),
        DNSResourceRecord(name: instance, cacheFlush: true, ttl: ttl, data: .txt(entries: [entry("id", "\(instance)")])),
        DNSResourceRecord(name: host, cacheFlush: true, ttl: ttl, data: .a(address)),
    ]
}

private func kitchenRecords(ttl: UInt32 = 120) -> [DNSResourceRecord] {
    records(kitchen, host: kitchenHost, port: 7000, ttl: ttl, address: [192, 168, 1, 30])
}

/// `count` fake instances with TTL 2^31, eight to a packet, as the flood sent them.
private func flood(_ count: Int, prefix: String = "Fake") -> [DNSMessage] {
    stride(from: 0, to: count, by: 8).map { start in
        let answers = (start..<min(start + 8, count)).flatMap { number in
            records(
                DNSName("\(prefix) \(number)._baton._tcp.local.")!, host: DNSName("fake-\(number).local.")!,
                port: UInt16(20_000 + number % 1_000), ttl: 1 << 31, address: [192, 168, 1, 66])
        }
        return DNSMessage(isResponse: true, isAuthoritative: true, answers: answers)
    }
}

private func startBrowser(_ transport: FakeTransport, timing: MDNSBrowser.Timing = MDNSBrowser.Timing())
    -> (MDNSBrowser, EventRecorder)
{
    let recorder = EventRecorder()
    let browser = MDNSBrowser(messageTransport: transport, timing: timing, onEvent: { recorder.record($0) })
    browser.start()
    transport.loop.run()
    return (browser, recorder)
}

@Suite("mDNS browser against a stranger: spoofed goodbyes, floods")
struct MDNSBrowserFloodTests {
    @Test func aGoodbyeFollowedWithinTheSecondByTheRecordsMakesNoRemoval() {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords()), from: kitchenAddress)
        transport.advance(3_000)
        _ = recorder.take()
        for _ in 0..<5 {
            transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords(ttl: 0)), from: stranger)
            transport.advance(300)
            // The owner's answer to the goodbye.
            transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords()), from: kitchenAddress)
            transport.advance(1_700)
        }
        #expect(recorder.take().isEmpty, "no removed, no added again")
        #expect(browser.services["Kitchen"] != nil)
        // A real goodbye, unanswered, still removes it a second later.
        transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords(ttl: 0)), from: kitchenAddress)
        transport.advance(1_000)
        #expect(recorder.take() == [.removed(instanceName: "Kitchen", reason: .goodbye)])
    }

    @Test func aFloodOf1500FakesFromOneAddressLeavesRoomForADeviceThatStartsAfter() {
        let transport = FakeTransport()
        let (browser, recorder) = startBrowser(transport)
        for packet in flood(1_500) {
            transport.deliver(packet, from: stranger)
        }
        transport.advance(100)
        let cache = browser.cache  // the embedded loop is this thread
        #expect(cache.count <= browser.timing.cacheCapacity)
        #expect(cache.count < 1_024, "the flooder was caught at its quota and its records dropped")
        #expect(cache.droppedForFlooding > 0)
        // The device starting afterwards is seen.
        transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords()), from: kitchenAddress)
        transport.advance(100)
        #expect(recorder.events.contains { $0.added?.instanceName == "Kitchen" })
        #expect(browser.services.keys.sorted() == ["Kitchen"], "no fake left")
        // The flooder's packets meanwhile are not heard.
        for packet in flood(80, prefix: "Late") {
            transport.deliver(packet, from: stranger)
        }
        transport.advance(100)
        #expect(browser.services.keys.sorted() == ["Kitchen"])
    }

    @Test func floodsFromManyAddressesFillTheCacheButNotAgainstANewcomer() throws {
        let transport = FakeTransport()
        var timing = MDNSBrowser.Timing()
        timing.cacheCapacity = 512
        timing.cacheQuotaPerServiceType = 512  // the whole cache, so that the flood fills it
        let (browser, recorder) = startBrowser(transport, timing: timing)
        // Sixteen strangers, each staying just within its quota of 128.
        for number in 0..<16 {
            let source = try SocketAddress(ipAddress: "192.168.1.\(100 + number)", port: 5353)
            for packet in flood(31, prefix: "Fake \(number)") {
                transport.deliver(packet, from: source)
            }
        }
        transport.advance(100)
        let full = browser.cache.count
        #expect(full == 512)
        transport.deliver(DNSMessage(isResponse: true, answers: kitchenRecords()), from: kitchenAddress)
        transport.advance(100)
        #expect(recorder.events.contains { $0.added?.instanceName == "Kitchen" })
        let after = browser.cache.count
        #expect(after == 512)
    }
}
