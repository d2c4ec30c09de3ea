import BatonDiscovery
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real sockets on real multicast, in private network namespaces the tests make (see
/// ``TestNetwork``): two hosts, `a` and `b`, on one veth link.
@Suite("mDNS over real multicast", .timeLimit(.minutes(1)))
struct MDNSMulticastTests {
    /// A transport started on `group`'s loop, in the namespace its thread entered.
    private func transport(
        on group: MultiThreadedEventLoopGroup, rescan: TimeAmount = .seconds(5)
    ) async throws -> MDNSTransport {
        var configuration = MDNSTransport.Configuration()
        configuration.interfaceRescanInterval = rescan
        return try await MDNSTransport.start(configuration: configuration, on: group.next()).get()
    }

    @Test func aResponderAndBrowsersOnAnotherHostFindEachOtherAndTheGoodbye() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            #expect(try await transportA.families.get() == [.ipv4, .ipv6])
            #expect(transportA.statistics.malformedPackets == 0)

            // A browser already running when the agent starts.
            let early = EventRecorder()
            let earlyBrowser = MDNSBrowser(transport: transportB, onEvent: { early.record($0) })
            earlyBrowser.start()
            let responder = MDNSResponder(
                instanceName: "Living Room TV", port: 7000, txt: [entry("id", "tv-1"), entry("kind", "tv")],
                transport: transportA)
            #expect(try await responder.start().get() == "Living Room TV")
            // Timings are scripts/bench's to measure, not a test's to assert.
            let (event, _) = try await early.waitFor { $0.added != nil }
            let service = try #require(event.added)
            #expect(service.instanceName == "Living Room TV")
            #expect(service.port == 7000)
            #expect(service.hostName == responder.hostName)
            #expect(service.txtValue("id") == "tv-1" && service.txtValue("kind") == "tv")
            let v1Index = try await transportB.interfaceIndex(named: "v1")
            let v1 = try #require(v1Index)
            #expect(service.interfaceIndices == [v1])
            #expect(service.addresses.contains(MDNSServiceAddress(bytes: [10, 77, 0, 1], interfaceIndex: v1)))
            let linkLocal = try #require(service.addresses.first { $0.family == .ipv6 })
            #expect(linkLocal.isLinkLocal && linkLocal.interfaceIndex == v1)
            #expect(linkLocal.description.hasSuffix("%\(v1)"))

            // A browser started when the agent is already there: its first query is answered.
            let late = EventRecorder()
            let lateBrowser = MDNSBrowser(transport: transportB, onEvent: { late.record($0) })
            lateBrowser.start()
            _ = try await late.waitFor { $0.added != nil }
            _ = try await late.waitFor { $0 == .enumerationCompleted }

            try await responder.stop().get()
            let (removed, _) = try await early.waitFor { $0.removed != nil }
            #expect(removed.removed?.0 == "Living Room TV")
            #expect(removed.removed?.1 == .goodbye)

            try await earlyBrowser.stop().get()
            try await lateBrowser.stop().get()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func aOneShotQueryIsAnsweredByUnicastToItsOwnPortOverBothFamilies() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            let responder = MDNSResponder(instanceName: "Living Room TV", port: 7000, transport: transportA)
            _ = try await responder.start().get()

            let replies = NIOLockedValueBox<[MDNSReceivedMessage]>([])
            let query = DNSMessage(id: 0x5eed, questions: [DNSQuestion(name: .batonService, type: .ptr)])
            // Closes after the window; the future says so.
            try await transportB.eventLoop.flatSubmit {
                transportB.sendOneShotQuery(query, listeningFor: .milliseconds(500)) { reply in
                    replies.withLockedValue { $0.append(reply) }
                }
            }.get()
            let received = replies.withLockedValue { $0 }
            #expect(Set(received.map(\.family)) == [.ipv4, .ipv6])
            for reply in received {
                #expect(reply.message.id == 0x5eed && reply.message.isResponse)
                #expect(reply.message.questions == query.questions, "the question is repeated (§6.7)")
                #expect(reply.sourcePort == 5353 && !reply.wasMulticast)
                #expect(reply.message.answers.map(\.data) == [.ptr(DNSName("Living Room TV._baton._tcp.local."))])
                #expect((reply.message.answers + reply.message.additionals).allSatisfy { $0.ttl <= 10 && !$0.cacheFlush })
            }

            try await responder.stop().get()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func twoRespondersWithOneNameEndWithTwoNames() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            // A second transport in `a`: a second process on that host, sharing port 5353.
            let watcherTransport = try await transport(on: groupA)

            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: watcherTransport, onEvent: { recorder.record($0) })
            browser.start()
            let first = MDNSResponder(instanceName: "Living Room TV", port: 7000, transport: transportA)
            let second = MDNSResponder(instanceName: "Living Room TV", port: 7001, transport: transportB)
            // Started together, so they probe at the same time and tiebreak.
            async let firstName = first.start().get()
            async let secondName = second.start().get()
            let names = try await [firstName, secondName]
            #expect(Set(names) == ["Living Room TV", "Living Room TV (2)"])

            _ = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV" }
            _ = try await recorder.waitFor { $0.added?.instanceName == "Living Room TV (2)" }
            let services = browser.services
            #expect(Set(services.values.map(\.port)) == [7000, 7001])
            let renamed = names[0] == "Living Room TV" ? second : first
            #expect(services["Living Room TV (2)"]?.port == renamed.port)

            try await first.stop().get()
            try await second.stop().get()
            try await browser.stop().get()
            for transport in [transportA, transportB, watcherTransport] { try await transport.close().get() }
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func malformedPacketsAreCountedAndDroppedWhileTheTransportCarriesOn() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            let responder = MDNSResponder(instanceName: "Sturdy", port: 7000, transport: transportA)
            _ = try await responder.start().get()

            // A plain socket in `b`, multicasting junk to a's group from an ordinary port.
            // Made on b's loop thread, so the socket is in b: a socket belongs to the namespace
            // of the thread that creates it, and DatagramBootstrap creates it on the caller's.
            let sender = try await groupB.next().flatSubmit {
                DatagramBootstrap(group: groupB).bind(host: "10.77.0.2", port: 0)
            }.get()
            let provider = try #require(sender as? any SocketOptionProvider)
            var interface = in_addr()
            interface.s_addr = UInt32(0x0A4D_0002).bigEndian  // 10.77.0.2
            try await provider.setIPMulticastIF(interface).get()
            let group = try SocketAddress(ipAddress: "224.0.0.251", port: 5353)
            var generator = SplitMix64(seed: 6762)
            var junk: [[UInt8]] = [
                [],  // empty
                [0, 0, 0, 0],  // a cut header
                header(qd: 1) + [0xC0, 0x0C, 0, 12, 0, 1],  // a name pointing at itself
                header(qd: 0xFFFF, an: 0xFFFF),  // absurd counts
                header(an: 1) + [0] + [0, 1, 0, 1, 0, 0, 0, 120, 0, 200, 1],  // rdata past the end
            ]
            for _ in 0..<100 {
                // Random bytes behind a header claiming records.
                let count = Int.random(in: 0..<60, using: &generator)
                junk.append(header(an: 3) + (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
            let before = transportA.statistics
            for packet in junk {
                try await sender.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: ByteBuffer(bytes: packet)))
            }
            // Some random packets may parse; every one that does not is counted.
            let unparsable = junk.filter { (try? parse($0)) == nil }.count
            let deadline = ContinuousClock.now + .seconds(5)
            while transportA.statistics.malformedPackets - before.malformedPackets < unparsable,
                  ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(transportA.statistics.malformedPackets - before.malformedPackets == unparsable)
            #expect(transportA.statistics.packetsReceived - before.packetsReceived >= junk.count)

            // And the responder still answers.
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            _ = try await recorder.waitFor { $0.added?.instanceName == "Sturdy" }

            try await browser.stop().get()
            try await responder.stop().get()
            try await sender.close()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func interfacesComingAndGoingAreJoinedAndLeft() async throws {
        try await TestNetwork.with { network in
            try TestNetwork.run("ip", "-n", network.a, "link", "set", "v0", "down")
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA, rescan: .milliseconds(100))
            let transportB = try await transport(on: groupB, rescan: .milliseconds(100))
            #expect(try await transportA.currentInterfaces().isEmpty)

            let responder = MDNSResponder(instanceName: "Roaming", port: 7000, transport: transportA)
            // With no link to probe on, probing waits for one.
            let started = responder.start()
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()

            // The link comes up: a announces on it, b queries on it.
            try TestNetwork.run("ip", "-n", network.a, "link", "set", "v0", "up")
            try TestNetwork.waitForCarrier(namespace: network.a, interface: "v0")
            #expect(try await started.get() == "Roaming")
            _ = try await recorder.waitFor { $0.added?.instanceName == "Roaming" }
            #expect(try await transportA.currentInterfaces().map(\.name) == ["v0"])

            // And goes down: what was learned there goes with it.
            try TestNetwork.run("ip", "-n", network.a, "link", "set", "v0", "down")
            let (removed, _) = try await recorder.waitFor { $0.removed != nil }
            #expect(removed.removed?.1 == .interfaceRemoved)

            try await browser.stop().get()
            try await responder.stop().get()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    /// NIO closes a datagram socket on a send error it holds fatal; the transport opens it again
    /// rather than go deaf and mute. (Found by the process tests: an agent whose interface went
    /// down as it announced was never heard of again.)
    @Test func aSendTheSystemRefusesDoesNotSilenceTheTransport() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            let transportA = try await transport(on: groupA)
            let transportB = try await transport(on: groupB)
            // No route to 192.0.2.1 in the namespace: sendmsg fails with ENETUNREACH, at once.
            let query = DNSMessage(questions: [DNSQuestion(name: "_baton._tcp.local.", type: .ptr)])
            let unroutable4 = try SocketAddress(ipAddress: "192.0.2.1", port: 5353)
            let unroutable6 = try SocketAddress(ipAddress: "2001:db8::1", port: 5353)
            try await groupA.next().flatSubmit {
                transportA.send(query, to: .unicast(unroutable4)).and(transportA.send(query, to: .unicast(unroutable6))).map { _ in }
            }.get()
            #expect(transportA.statistics.sendFailures == 2)

            let responder = MDNSResponder(instanceName: "Still Here", port: 7000, transport: transportA)
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            #expect(try await responder.start().get() == "Still Here")
            _ = try await recorder.waitFor { $0.added?.instanceName == "Still Here" }
            #expect(try await transportA.families.get() == [.ipv4, .ipv6])

            try await browser.stop().get()
            try await responder.stop().get()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func withoutAnIPv6SocketTheTransportCarriesOnOverIPv4() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            // Something holds [::]:5353 without sharing it, so our IPv6 bind fails.
            let squatter = try await groupA.next().flatSubmit {
                DatagramBootstrap(group: groupA)
                    .channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 1)
                    .bind(to: try! SocketAddress(ipAddress: "::", port: 5353))
            }.get()
            let transportA = try await transport(on: groupA)
            #expect(try await transportA.families.get() == [.ipv4])
            let transportB = try await transport(on: groupB)

            let responder = MDNSResponder(instanceName: "Four Only", port: 7000, transport: transportA)
            _ = try await responder.start().get()
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            browser.start()
            let (added, _) = try await recorder.waitFor { $0.added != nil }
            #expect(added.added?.instanceName == "Four Only")
            // Found over IPv4; the records still list the host's IPv6 addresses too.
            #expect(added.added?.addresses.contains { $0.family == .ipv4 } == true)
            #expect(added.added?.addresses.contains { $0.family == .ipv6 } == true)

            try await browser.stop().get()
            try await responder.stop().get()
            try await squatter.close()
            try await transportA.close().get()
            try await transportB.close().get()
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }

    @Test func aHundredRunningAgentsAreAllFound() async throws {
        try await TestNetwork.with { network in
            let groupA = try await TestNetwork.eventLoopGroup(in: network.a)
            let groupB = try await TestNetwork.eventLoopGroup(in: network.b)
            // Ten sockets with ten agents each, as ten processes would have. (A hundred sockets
            // on this one debug-build thread would measure the thread: each gets every packet.)
            var transports: [MDNSTransport] = []
            var responders: [MDNSResponder] = []
            for _ in 1...10 { transports.append(try await transport(on: groupA)) }
            for number in 1...100 {
                let transport = transports[number % 10]
                responders.append(
                    MDNSResponder(
                        instanceName: "Agent \(number)", port: UInt16(7000 + number), txt: [entry("id", "\(number)")],
                        transport: transport))
            }
            let names = try await withThrowingTaskGroup(of: String.self) { group in
                for responder in responders { group.addTask { try await responder.start().get() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(names.count == 100)
            // Running: the second announcements are out too.
            try await Task.sleep(for: .milliseconds(1_200))

            let transportB = try await transport(on: groupB)
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transportB, onEvent: { recorder.record($0) })
            // How fast is scripts/bench's to measure; here, that every one is found.
            browser.start()
            _ = try await recorder.waitFor { $0 == .enumerationCompleted }
            var found = Set(recorder.events.compactMap { $0.added?.instanceName })
            let deadline = ContinuousClock.now + .seconds(20)
            while found.count < 100, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                found = Set(recorder.events.compactMap { $0.added?.instanceName })
            }
            #expect(found == names)
            try await browser.stop().get()
            for responder in responders { _ = responder.stop() }
            for transport in transports + [transportB] { try await transport.close().get() }
            try await groupA.shutdownGracefully()
            try await groupB.shutdownGracefully()
        }
    }
}

extension MDNSTransport {
    /// The interfaces in use.
    func currentInterfaces() async throws -> [MDNSInterface] {
        try await interfacesInUse().get()
    }

    /// The index of the interface `name` in use; nil if none.
    func interfaceIndex(named name: String) async throws -> Int? {
        try await currentInterfaces().first { $0.name == name }?.index
    }
}
