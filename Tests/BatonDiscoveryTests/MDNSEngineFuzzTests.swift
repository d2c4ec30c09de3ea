@testable import BatonDiscovery
import NIOCore
import Testing

/// Random traffic a hostile or broken network could send, fed to a responder and a browser in
/// virtual time: nothing may trap, and the browser's events must stay consistent.
@Suite("mDNS engine fuzzing")
struct MDNSEngineFuzzTests {
    private struct Generator {
        var random: SplitMix64
        let names: [DNSName] = [
            "Fuzz._baton._tcp.local.", "Other._baton._tcp.local.", "fuzz-host.local.", "other.local.",
            .batonService, .serviceTypeEnumeration, "_baton._tcp.local.x.", ".", "FUZZ._BATON._TCP.LOCAL.",
        ]

        mutating func pick<T>(_ values: [T]) -> T {
            values[Int.random(in: 0..<values.count, using: &random)]
        }

        mutating func bytes(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
        }

        mutating func data() -> DNSRecordData {
            switch Int.random(in: 0..<7, using: &random) {
            case 0: .a(pick([[192, 168, 1, 20], [10, 0, 0, 1], bytes(4)]))
            case 1: .aaaa(bytes(16))
            case 2: .ptr(pick(names))
            case 3: .srv(priority: 0, weight: 0, port: pick([7000, 1, 0]), target: pick(names))
            case 4: .txt(entries: pick([[], [entry("id", "x")], [entry("a"), entry("b", "c")]]))
            case 5: .nsec(next: pick(names), types: [.a, .srv])
            default: .unknown(type: DNSRecordType(rawValue: 99), bytes: bytes(3))
            }
        }

        mutating func record() -> DNSResourceRecord {
            DNSResourceRecord(
                name: pick(names), cacheFlush: Bool.random(using: &random), ttl: pick([0, 1, 10, 120, 4500, .max]),
                data: data())
        }

        mutating func records() -> [DNSResourceRecord] {
            (0..<Int.random(in: 0..<5, using: &random)).map { _ in record() }
        }

        mutating func message() -> DNSMessage {
            var message = DNSMessage(
                id: UInt16.random(in: 0...3, using: &random), isResponse: Bool.random(using: &random),
                isTruncated: Int.random(in: 0..<8, using: &random) == 0,
                questions: (0..<Int.random(in: 0..<3, using: &random)).map { _ in
                    DNSQuestion(
                        name: pick(names), type: pick([.a, .aaaa, .ptr, .srv, .txt, .any, .nsec]),
                        recordClass: pick([.internet, .any, DNSClass(rawValue: 3)]), unicastResponse: Bool.random(using: &random))
                },
                answers: records(), authorities: records(), additionals: records())
            if Int.random(in: 0..<20, using: &random) == 0 { message.flags |= 0x0800 }  // opcode 1
            return message
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func randomTrafficNeverTraps(seed: UInt64) throws {
        var generator = Generator(random: SplitMix64(seed: seed))
        let wlan = MDNSInterface(index: 3, name: "wlan0", ipv6Addresses: [generator.bytes(16)])
        let transport = FakeTransport()
        let responder = MDNSResponder(
            instanceName: "Fuzz", port: 7000, txt: [entry("id", "fuzz")], hostName: "fuzz-host.local.",
            messageTransport: transport)
        let recorder = EventRecorder()
        let browser = MDNSBrowser(messageTransport: transport, onEvent: { recorder.record($0) })
        _ = responder.start()
        browser.start()
        transport.loop.run()
        let sources = [
            FakeTransport.peer, try SocketAddress(ipAddress: "192.168.1.20", port: 5353),
            try SocketAddress(ipAddress: "fe80::1", port: 5353), try SocketAddress(ipAddress: "10.1.1.1", port: 49_152),
        ]
        for step in 0..<3_000 {
            transport.deliver(
                generator.message(), from: generator.pick(sources), interfaceIndex: generator.pick([nil, 2, 3, 99]),
                family: generator.pick([.ipv4, .ipv6]), multicast: Int.random(in: 0..<10, using: &generator.random) > 0)
            if step % 97 == 0 {
                if transport.interfaces.count == 1 {
                    transport.interfaces.append(wlan)
                    transport.emit(.interfaceAdded(wlan))
                } else {
                    transport.interfaces.removeLast()
                    transport.emit(.interfaceRemoved(wlan))
                }
            }
            transport.advance(Int64.random(in: 0...700, using: &generator.random))
        }
        responder.update(txt: [entry("id", "after")])
        let stopped = responder.stop()
        transport.advance(130_000)
        try stopped.wait()

        // Every message we sent can be sent: it serializes and parses back the same.
        for sent in transport.sent {
            #expect(try DNSMessage(parsing: sent.message.serialized()) == sent.message)
        }
        #expect(responder.instanceName.hasPrefix("Fuzz"))
        // Added before updated or removed, removed before added again.
        var known = Set<String>()
        for event in recorder.events {
            switch event {
            case .added(let service): #expect(known.insert(service.instanceName).inserted)
            case .updated(let service): #expect(known.contains(service.instanceName))
            case .removed(let name, _): #expect(known.remove(name) != nil)
            case .enumerationCompleted: break
            }
        }
        #expect(recorder.events.filter { $0 == .enumerationCompleted }.count == 1)
        _ = browser.stop()
        transport.loop.run()
    }

    @Test func aVeryLongServiceTypeStillGivesValidNames() {
        let labels = (0..<3).map { _ in String(repeating: "t", count: 60) } + ["_tcp", "local"]
        let type = DNSName(labels: labels)!
        let transport = FakeTransport()
        let responder = MDNSResponder(
            instanceName: String(repeating: "n", count: 63), port: 1, serviceType: type, messageTransport: transport)
        #expect(responder.instanceFullName.wireLength <= DNSName.maxWireLength)
        let next = MDNSResponder.nextInstanceName(
            after: responder.instanceName, limit: MDNSResponder.labelLimit(for: type))
        #expect(next.utf8.count <= MDNSResponder.labelLimit(for: type))
        #expect(MDNSResponder.nextInstanceName(after: "X (9223372036854775807)") == "X (9223372036854775807) (2)")
    }
}
