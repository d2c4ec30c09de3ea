@testable import BatonDiscovery
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@Suite("mDNS receive handler")
struct MDNSReceiveHandlerTests {
    private final class Counts: Sendable {
        let messages = NIOLockedValueBox<[MDNSReceivedMessage]>([])
        let malformed = NIOLockedValueBox(0)
    }

    private func channel(_ counts: Counts) throws -> EmbeddedChannel {
        let handler = MDNSReceiveHandler(
            family: .ipv4, logger: Logger(label: "test"),
            onMessage: { message in counts.messages.withLockedValue { $0.append(message) } },
            onMalformed: { counts.malformed.withLockedValue { $0 += 1 } })
        return EmbeddedChannel(handler: handler)
    }

    @Test func malformedDatagramsAreCountedAndDroppedAndGoodOnesPassWithTheirInterface() throws {
        let counts = Counts()
        let channel = try channel(counts)
        let source = try SocketAddress(ipAddress: "10.0.0.9", port: 5353)
        let group = try SocketAddress(ipAddress: "224.0.0.251", port: 5353)
        let metadata = AddressedEnvelope<ByteBuffer>.Metadata(
            ecnState: .transportNotCapable, packetInfo: NIOPacketInfo(destinationAddress: group, interfaceIndex: 7))
        var junk: [[UInt8]] = [[], [1, 2, 3], header(qd: 1) + [0xC0, 0x0C, 0, 12, 0, 1], header(an: 0xFFFF)]
        var generator = SplitMix64(seed: 5353)
        for _ in 0..<500 {
            junk.append((0..<Int.random(in: 0..<80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let unparsable = junk.filter { (try? parse($0)) == nil }.count
        for packet in junk {
            try channel.writeInbound(AddressedEnvelope(remoteAddress: source, data: ByteBuffer(bytes: packet), metadata: metadata))
        }
        let good = DNSMessage(questions: [DNSQuestion(name: .batonService, type: .ptr)])
        try channel.writeInbound(AddressedEnvelope(remoteAddress: source, data: good.serialized(), metadata: metadata))

        #expect(counts.malformed.withLockedValue { $0 } == unparsable)
        let messages = counts.messages.withLockedValue { $0 }
        #expect(messages.count == junk.count - unparsable + 1)
        #expect(messages.last?.message == good)
        #expect(messages.last?.interfaceIndex == 7)
        #expect(messages.last?.wasMulticast == true)
        #expect(messages.last?.sourcePort == 5353)
        #expect(try channel.readInbound(as: AddressedEnvelope<ByteBuffer>.self) == nil, "nothing passes further")
    }
}
