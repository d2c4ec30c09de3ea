import BatonDiscovery
import NIOCore
import Testing

@Suite("DNS message round trips")
struct DNSMessageRoundTripTests {
    @Test func everyRecordTypeRoundTrips() throws {
        let message = everyTypeResponse()
        let parsed = try DNSMessage(parsing: message.serialized())
        #expect(parsed == message)
        // Compare the parts == might gloss over: case, flags, the flag bits of class fields.
        #expect(parsed.additionals.map(\.name.description) == message.additionals.map(\.name.description))
        #expect(parsed.flags == 0x8400)
        #expect(parsed.isResponse && parsed.isAuthoritative && !parsed.isTruncated)
        #expect(parsed.questions[0].unicastResponse)
        #expect(parsed.additionals.allSatisfy { $0.cacheFlush })
        #expect(!parsed.answers[0].cacheFlush)
        #expect(parsed.additionals.map(\.type) == [.srv, .txt, .a, .aaaa, .nsec])
        #expect(parsed.authorities[0].type == DNSRecordType(rawValue: 99))
        guard case .srv(_, _, let port, let target) = parsed.additionals[0].data else {
            Issue.record("expected SRV, got \(parsed.additionals[0].data)")
            return
        }
        #expect(port == 7_000)
        #expect(target.description == "living-room.local.")
    }

    @Test func eachRecordTypeRoundTripsAlone() throws {
        let owner: DNSName = "Host.local."
        let cases: [DNSRecordData] = [
            .a([10, 0, 0, 1]),
            .aaaa([UInt8](0..<16)),
            .ptr("Living Room TV (2)._baton._tcp.local."),
            .srv(priority: 1, weight: 2, port: 65_535, target: .root),
            .txt([ascii("a=1"), [], [UInt8](repeating: 0x7A, count: 255)]),
            .txt([]),
            .nsec(next: owner, types: []),
            .nsec(next: owner, types: [.a, .ptr, .txt, .aaaa, .srv, .nsec, DNSRecordType(rawValue: 65_535)]),
            .unknown(type: DNSRecordType(rawValue: 65_280), bytes: []),
            .unknown(type: DNSRecordType(rawValue: 13), bytes: [UInt8](repeating: 0xEE, count: 300)),
        ]
        for data in cases {
            let message = DNSMessage(
                id: 0xBEEF,
                answers: [
                    DNSResourceRecord(name: owner, recordClass: DNSClass(rawValue: 3), ttl: 0xFFFF_FFFF, data: data),
                ])
            let parsed = try DNSMessage(parsing: message.serialized())
            #expect(parsed == message, "\(data)")
            #expect(parsed.answers.first?.data.uncompressedBytes == data.uncompressedBytes)
        }
    }

    @Test func questionsKeepTypeClassAndUnicastBit() throws {
        let message = DNSMessage(questions: [
            DNSQuestion(name: "_baton._tcp.local.", type: .ptr),
            DNSQuestion(name: "tv.local.", type: .any, recordClass: .any, unicastResponse: true),
            DNSQuestion(
                name: "tv.local.", type: DNSRecordType(rawValue: 4_242), recordClass: DNSClass(rawValue: 0x7FFF)),
        ])
        #expect(try DNSMessage(parsing: message.serialized()) == message)
    }

    @Test func flagWordRoundTripsWhole() throws {
        var message = DNSMessage(id: 7, isTruncated: true)
        #expect(message.flags == 0x0200)
        message.flags = 0xFFFF
        let parsed = try DNSMessage(parsing: message.serialized())
        #expect(parsed.flags == 0xFFFF)
        #expect(parsed.opcode == 15)
        #expect(parsed.responseCode == 15)
        #expect(parsed.id == 7)
        var cleared = parsed
        cleared.isResponse = false
        cleared.isAuthoritative = false
        cleared.isTruncated = false
        #expect(cleared.flags == 0xFFFF & ~0x8600)
    }

    @Test func trailingPaddingIsIgnored() throws {
        let message = everyTypeResponse()
        var buffer = message.serialized()
        buffer.writeBytes([UInt8](repeating: 0, count: 40))
        #expect(try DNSMessage(parsing: buffer) == message)
    }

    @Test func messageMayStartPartWayIntoTheBuffer() throws {
        let message = everyTypeResponse()
        var buffer = ByteBuffer(bytes: [0xAA, 0xBB, 0xCC])
        message.serialize(into: &buffer)
        // Pointers count from the header, not from the start of the buffer.
        #expect(bytes(of: buffer).dropFirst(3).elementsEqual(bytes(of: message.serialized())))
        buffer.moveReaderIndex(forwardBy: 3)
        #expect(try DNSMessage(parsing: buffer) == message)
        #expect(buffer.readerIndex == 3)
    }

    @Test func messagesPast16KiBStillRoundTrip() throws {
        // Names past offset 0x3FFF cannot be pointed to; they must be written whole.
        let records = (0..<400).map { i in
            DNSResourceRecord(
                name: name("instance \(i)._baton._tcp.local."), ttl: 120,
                data: .txt([[UInt8](repeating: UInt8(i % 200), count: 60)]))
        }
        let message = DNSMessage(isResponse: true, answers: records)
        let buffer = message.serialized()
        #expect(buffer.readableBytes > 0x4000)
        #expect(try DNSMessage(parsing: buffer) == message)
    }

    @Test func emptyMessageIsJustAHeader() throws {
        let message = DNSMessage()
        #expect(bytes(of: message.serialized()) == [UInt8](repeating: 0, count: 12))
        #expect(try DNSMessage(parsing: message.serialized()) == message)
    }
}
