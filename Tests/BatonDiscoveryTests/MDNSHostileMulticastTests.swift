@testable import BatonDiscovery
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// A stranger on the link: its own mDNS socket (port 5353, as any responder's) in namespace `b`,
/// next to the watcher, sending what it likes and hearing what is multicast.
private final class Stranger: Sendable {
    let transport: MDNSTransport
    let interfaceIndex: Int
    /// Every response heard, with when.
    private let heard = NIOLockedValueBox<[(message: DNSMessage, time: ContinuousClock.Instant)]>([])

    init(transport: MDNSTransport, interfaceIndex: Int) async throws {
        self.transport = transport
        self.interfaceIndex = interfaceIndex
        try await transport.eventLoop.submit { [heard] in
            _ = transport.addListener { event in
                guard case .message(let received) = event, received.message.isResponse else { return }
                let now = ContinuousClock.now
                heard.withLockedValue { $0.append((received.message, now)) }
            }
        }.get()
    }

    /// Multicasts `message` over IPv4 (one sender address, as a flood from one host).
    func send(_ message: DNSMessage) async throws {
        try await transport.eventLoop.flatSubmit { [self] in
            transport.send(message, to: .multicast(interfaceIndex: interfaceIndex, family: .ipv4))
        }.get()
    }

    /// Responses heard since `since` holding a record of `name` and `type` with a TTL above 0.
    func responses(with name: DNSName, _ type: DNSRecordType, since: ContinuousClock.Instant) -> [DNSMessage] {
        heard.withLockedValue { heard in
            heard.filter { $0.time >= since }.map(\.message).filter { message in
                message.answers.contains { $0.name == name && $0.type == type && $0.ttl > 0 }
            }
        }
    }
}

/// The attacks of issue 21 on real multicast between two namespaces (see ``TestNetwork``): a
/// responder in `a`, a watcher and a stranger in `b`.
@Suite("mDNS over real multicast, against a stranger", .timeLimit(.minutes(2)))
struct MDNSHostileMulticastTests {
    private static let instance: DNSName = "Living Room TV._baton._tcp.local."

    private func transport(on group: MultiThreadedEventLoopGroup) async throws -> MDNSTransport {
        try await MDNSTransport.start(configuration: MDNSTransport.Configuration(), on: group.next()).get()
    }

    @Test func spoofedGoodbyesEveryHalfSecondMakeNoRemovalAndTheOwnerAnnouncesAgainButARealGoodbyeRemoves() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            let strangerTransport = try await transport(on: groupB)
            let v1 = try #require(try await strangerTransport.interfaceIndex(named: "v1"))
            let stranger = try await Stranger(transport: strangerTransport, interfaceIndex: v1)

            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            let responder = MDNSResponder(
                instanceName: "Living Room TV", port: 7000, txt: [entry("id", "tv-1")], transport: transportA)
            _ = try await responder.start().get()
            _ = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV" }

            // The stranger replays what the owner announced, with TTL 0, every half second.
            let seen = try #require(stranger.responses(with: Self.instance, .srv, since: .now - .seconds(60)).last)
            var goodbye = DNSMessage(isResponse: true, isAuthoritative: true, answers: seen.answers + seen.additionals)
            for index in goodbye.answers.indices { goodbye.answers[index].ttl = 0 }
            let start = ContinuousClock.now
            for _ in 0..<12 {
                try await stranger.send(goodbye)
                try await Task.sleep(for: .milliseconds(500))
            }
            try await Task.sleep(for: .seconds(1.5))  // the last goodbye's second is over
            #expect(!recorder.events.contains { $0.removed != nil }, "\(recorder.events)")
            #expect(browser.services["Living Room TV"]?.port == 7000)
            let answers = stranger.responses(with: Self.instance, .srv, since: start)
            #expect(answers.count >= 12, "the owner announced its records again after each goodbye: \(answers.count)")

            // The owner's own goodbye still removes it.
            try await responder.stop().get()
            let (removed, _) = try await recorder.waitFor { $0.removed != nil }
            #expect(removed.removed?.0 == "Living Room TV" && removed.removed?.1 == .goodbye)

            try await browser.stop().get()
            for transport in [transportA, transportB, strangerTransport] { try await transport.close().get() }
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func aNameAStrangerHeldForAWhileIsTakenBackOnceItStops() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            let strangerTransport = try await transport(on: groupB)
            let v1 = try #require(try await strangerTransport.interfaceIndex(named: "v1"))
            let stranger = try await Stranger(transport: strangerTransport, interfaceIndex: v1)

            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            let responder = MDNSResponder(
                instanceName: "Living Room TV", port: 7000, txt: [entry("id", "tv-1")], transport: transportA)
            let names = NIOLockedValueBox<[String]>([])
            let changes = responder.nameChanges
            let watching = Task { for await name in changes { names.withLockedValue { $0.append(name) } } }
            _ = try await responder.start().get()
            _ = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV" }

            // The stranger claims the name (its own host and port) four times a second, for 8 s,
            // then goes quiet without a goodbye.
            let claim = DNSMessage(
                isResponse: true, isAuthoritative: true,
                answers: [
                    DNSResourceRecord(
                        name: Self.instance, cacheFlush: true, ttl: 120,
                        data: .srv(priority: 0, weight: 0, port: 9000, target: "evil.local.")),
                    DNSResourceRecord(
                        name: Self.instance, cacheFlush: true, ttl: 120, data: .txt(entries: [entry("id", "evil")])),
                    DNSResourceRecord(name: "evil.local.", cacheFlush: true, ttl: 120, data: .a([10, 77, 0, 2])),
                ])
            for _ in 0..<32 {
                try await stranger.send(claim)
                try await Task.sleep(for: .milliseconds(250))
            }
            #expect(names.withLockedValue { $0 } == ["Living Room TV (2)"], "renamed while the stranger held the name")
            let renamed = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV (2)" }
            #expect(renamed.event.added?.port == 7000)

            // Within seconds of the stranger going quiet, the name is the owner's again, on the
            // wire: a watcher sees it at the owner's port, and the interim name goes.
            let deadline = ContinuousClock.now + .seconds(40)
            while browser.services["Living Room TV"]?.port != 7000 || browser.services["Living Room TV (2)"] != nil {
                guard ContinuousClock.now < deadline else {
                    Issue.record("not taken back: \(browser.services), names \(names.withLockedValue { $0 })")
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(browser.services["Living Room TV"]?.hostName == responder.hostName)
            #expect(responder.instanceName == "Living Room TV")
            #expect(names.withLockedValue { $0 } == ["Living Room TV (2)", "Living Room TV"])

            try await responder.stop().get()
            watching.cancel()
            try await browser.stop().get()
            for transport in [transportA, transportB, strangerTransport] { try await transport.close().get() }
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func aFloodOf1500FakesWithHugeTTLsLeavesTheCacheBoundedAndADeviceStartedAfterIsSeen() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            let strangerTransport = try await transport(on: groupB)
            let v1 = try #require(try await strangerTransport.interfaceIndex(named: "v1"))
            let stranger = try await Stranger(transport: strangerTransport, interfaceIndex: v1)

            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            _ = try await recorder.waitFor { $0 == .enumerationCompleted }

            // 1,500 fake devices, eight to a packet, TTL 2^31, aimed at the stranger's host.
            for start in stride(from: 0, to: 1_500, by: 8) {
                var answers: [DNSResourceRecord] = []
                for number in start..<min(start + 8, 1_500) {
                    let name = DNSName("Fake \(number)._baton._tcp.local.")!
                    let host = DNSName("fake-\(number).local.")!
                    answers += [
                        DNSResourceRecord(name: .batonService, ttl: 1 << 31, data: .ptr(name)),
                        DNSResourceRecord(
                            name: name, cacheFlush: true, ttl: 1 << 31,
                            data: .srv(priority: 0, weight: 0, port: 7000, target: host)),
                        DNSResourceRecord(
                            name: name, cacheFlush: true, ttl: 1 << 31, data: .txt(entries: [entry("id", "fake-\(number)")])),
                        DNSResourceRecord(name: host, cacheFlush: true, ttl: 1 << 31, data: .a([10, 77, 0, 2])),
                    ]
                }
                try await stranger.send(DNSMessage(isResponse: true, isAuthoritative: true, answers: answers))
            }
            // Its last packet is in when the stranger, also in b, hears it back.
            let last: DNSName = "Fake 1499._baton._tcp.local."
            let heard = ContinuousClock.now + .seconds(10)
            while stranger.responses(with: last, .srv, since: .now - .seconds(60)).isEmpty, ContinuousClock.now < heard {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(200))
            let cached = try await browser.eventLoop.submit { browser.cache.count }.get()
            #expect(cached <= browser.timing.cacheCapacity)
            #expect(cached < 1_024, "the flooder, over its quota, was dropped: \(cached)")

            // A device that starts after the flood is seen by the running watcher.
            let responder = MDNSResponder(
                instanceName: "Living Room TV", port: 7000, txt: [entry("id", "tv-1")], transport: transportA)
            _ = try await responder.start().get()
            _ = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV" }
            #expect(browser.services.keys.filter { $0.hasPrefix("Fake") }.isEmpty, "\(browser.services.count) services")

            try await responder.stop().get()
            try await browser.stop().get()
            for transport in [transportA, transportB, strangerTransport] { try await transport.close().get() }
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }
}
