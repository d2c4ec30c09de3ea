import BatonDiscovery
import NIOCore
import Testing

@Suite("DNS message wire format")
struct DNSMessageWireFormatTests {
    /// `_baton._tcp.local.` uncompressed: 6 _baton 4 _tcp 5 local 0.
    let serviceName: [UInt8] = [
        0x06, 0x5F, 0x62, 0x61, 0x74, 0x6F, 0x6E,  // _baton
        0x04, 0x5F, 0x74, 0x63, 0x70,  // _tcp
        0x05, 0x6C, 0x6F, 0x63, 0x61, 0x6C,  // local
        0x00,
    ]

    @Test func ptrQueryMatchesTheRFCLayoutByteForByte() throws {
        let query = DNSMessage(questions: [DNSQuestion(name: "_baton._tcp.local.", type: .ptr)])
        let expected: [UInt8] =
            [
                0x00, 0x00,  // ID 0 (RFC 6762 §18.1)
                0x00, 0x00,  // flags: standard query
                0x00, 0x01,  // QDCOUNT
                0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // ANCOUNT, NSCOUNT, ARCOUNT
            ] + serviceName + [
                0x00, 0x0C,  // QTYPE PTR
                0x00, 0x01,  // QCLASS IN
            ]
        #expect(bytes(of: query.serialized()) == expected)
        #expect(try parse(expected) == query)
    }

    @Test func unicastResponseBitIsTheTopBitOfQClass() {
        let query = DNSMessage(questions: [DNSQuestion(name: "_baton._tcp.local.", type: .ptr, unicastResponse: true)])
        #expect(bytes(of: query.serialized()).suffix(4) == [0x00, 0x0C, 0x80, 0x01])
    }

    @Test func responseCompressesOwnerAndRDataNames() throws {
        let response = DNSMessage(
            isResponse: true, isAuthoritative: true,
            answers: [
                DNSResourceRecord(name: "_baton._tcp.local.", ttl: 4500, data: .ptr("Living Room._baton._tcp.local.")),
            ],
            additionals: [
                DNSResourceRecord(
                    name: "Living Room._baton._tcp.local.", cacheFlush: true, ttl: 120,
                    data: .srv(priority: 0, weight: 0, port: 7_000, target: "tv.local.")),
            ])
        let expected: [UInt8] =
            [
                0x00, 0x00, 0x84, 0x00,  // ID 0; QR and AA
                0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
            ] + serviceName + [  // answer owner at offset 12
                0x00, 0x0C, 0x00, 0x01,  // PTR IN
                0x00, 0x00, 0x11, 0x94,  // TTL 4500
                0x00, 0x0E,  // RDLENGTH 14
                0x0B,
            ] + ascii("Living Room") + [  // instance label at offset 41
                0xC0, 0x0C,  // → _baton._tcp.local. at 12
                // additional: owner is the PTR's target, already written at 41
                0xC0, 0x29,
                0x00, 0x21, 0x80, 0x01,  // SRV, cache-flush + IN
                0x00, 0x00, 0x00, 0x78,  // TTL 120
                0x00, 0x0B,  // RDLENGTH 11
                0x00, 0x00, 0x00, 0x00, 0x1B, 0x58,  // priority 0, weight 0, port 7000
                0x02, 0x74, 0x76,  // tv
                0xC0, 0x18,  // → local. at 24
            ]
        #expect(bytes(of: response.serialized()) == expected)
        #expect(try parse(expected) == response)
    }

    @Test func compressionShrinksRepeatedServiceSuffixes() throws {
        let instances = (1...10).map { name("TV \($0)._baton._tcp.local.") }
        let message = DNSMessage(
            isResponse: true, isAuthoritative: true,
            answers: instances.map { DNSResourceRecord(name: "_baton._tcp.local.", ttl: 4500, data: .ptr($0)) },
            additionals: instances.map {
                DNSResourceRecord(
                    name: $0, cacheFlush: true, ttl: 120,
                    data: .srv(priority: 0, weight: 0, port: 7_000, target: "living-room.local."))
            })
        let records = message.answers + message.additionals
        let uncompressed = 12 + records.reduce(0) { $0 + $1.name.wireLength + 10 + $1.data.uncompressedBytes.count }
        let compressed = message.serialized().readableBytes
        #expect(compressed < uncompressed)
        // Each repeat of `_baton._tcp.local.` (19 bytes) after the first becomes a 2-byte pointer.
        #expect(compressed <= uncompressed - 19 * 10)
        #expect(try DNSMessage(parsing: message.serialized()) == message)
    }

    @Test func suffixesDifferingInCaseAreNotMerged() throws {
        // Compressing `LOCAL.` into `local.` would change what the reader sees.
        let message = DNSMessage(answers: [
            DNSResourceRecord(name: "a.local.", ttl: 1, data: .ptr("B.LOCAL.")),
        ])
        let parsed = try DNSMessage(parsing: message.serialized())
        guard case .ptr(let target) = parsed.answers[0].data else {
            Issue.record("expected PTR")
            return
        }
        #expect(target.description == "B.LOCAL.")
    }

    @Test func nsecBitmapMatchesRFC4034Layout() {
        // mDNS negative answer for a host with only A and AAAA records (RFC 6762 §6.1).
        let data = DNSRecordData.nsec(next: "tv.local.", types: [.a, .aaaa])
        #expect(data.uncompressedBytes == [2] + ascii("tv") + [5] + ascii("local") + [0,
            0x00, 0x04,  // window 0, 4 bytes
            0x40, 0x00, 0x00, 0x08,  // bit 1 (A), bit 28 (AAAA)
        ])
        let twoWindows = DNSRecordData.nsec(next: .root, types: [.srv, DNSRecordType(rawValue: 0x0102)])
        #expect(twoWindows.uncompressedBytes == [0, 0x00, 0x05, 0, 0, 0, 0, 0x40, 0x01, 0x01, 0x20])
    }
}
