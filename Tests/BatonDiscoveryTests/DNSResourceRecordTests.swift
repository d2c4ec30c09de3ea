import BatonDiscovery
import Testing

@Suite("DNS resource records")
struct DNSResourceRecordTests {
    @Test func sameRecordIgnoresTTLCacheFlushAndNameCase() {
        let ours = DNSResourceRecord(name: "TV._baton._tcp.local.", cacheFlush: true, ttl: 120,
                                     data: .srv(priority: 0, weight: 0, port: 7_000, target: "Host.local."))
        let echoed = DNSResourceRecord(name: "tv._BATON._tcp.local.", ttl: 60,
                                       data: .srv(priority: 0, weight: 0, port: 7_000, target: "host.LOCAL."))
        #expect(ours.isSameRecord(as: echoed))
        #expect(ours != echoed)

        var otherPort = echoed
        otherPort.data = .srv(priority: 0, weight: 0, port: 7_001, target: "host.local.")
        #expect(!ours.isSameRecord(as: otherPort))
        var otherClass = echoed
        otherClass.recordClass = DNSClass(rawValue: 3)
        #expect(!ours.isSameRecord(as: otherClass))
        var otherName = echoed
        otherName.name = "tv2._baton._tcp.local."
        #expect(!ours.isSameRecord(as: otherName))
    }

    @Test func sameRecordComparesNSECTypesAsASet() {
        let a = DNSResourceRecord(name: "h.local.", ttl: 120, data: .nsec(next: "h.local.", types: [.a, .aaaa]))
        let b = DNSResourceRecord(name: "h.local.", ttl: 0, data: .nsec(next: "H.local.", types: [.aaaa, .a]))
        #expect(a.isSameRecord(as: b))
    }

    @Test func lexicographicOrderFollowsRFC6762Section8_2() {
        // RFC 6762 §8.2's own example: 169.254.200.50 is later than 169.254.99.200.
        let low = DNSResourceRecord(name: "cheshire.local.", ttl: 120, data: .a([169, 254, 99, 200]))
        let high = DNSResourceRecord(name: "cheshire.local.", ttl: 120, data: .a([169, 254, 200, 50]))
        #expect(high.lexicographicOrder(comparedTo: low) > 0)
        #expect(low.lexicographicOrder(comparedTo: high) < 0)
        #expect(low.lexicographicOrder(comparedTo: low) == 0)

        // Class first (the cache-flush bit aside), then type, then data.
        var flushed = low
        flushed.cacheFlush = true
        #expect(flushed.lexicographicOrder(comparedTo: low) == 0)
        var otherClass = low
        otherClass.recordClass = DNSClass(rawValue: 2)
        #expect(otherClass.lexicographicOrder(comparedTo: high) > 0)
        let aaaa = DNSResourceRecord(name: "cheshire.local.", ttl: 120, data: .aaaa([UInt8](repeating: 0, count: 16)))
        #expect(aaaa.lexicographicOrder(comparedTo: high) > 0)

        // Data that runs out first is earlier.
        let short = DNSResourceRecord(name: "x.local.", ttl: 1, data: .txt([ascii("ab")]))
        let long = DNSResourceRecord(name: "x.local.", ttl: 1, data: .txt([ascii("ab"), []]))
        #expect(long.lexicographicOrder(comparedTo: short) > 0)
    }

    @Test func probeSetsCompareSortedRecordByRecord() {
        let srv = DNSResourceRecord(name: "tv._baton._tcp.local.", ttl: 120,
                                    data: .srv(priority: 0, weight: 0, port: 7_000, target: "a.local."))
        let txt = DNSResourceRecord(name: "tv._baton._tcp.local.", ttl: 120, data: .txt([ascii("v=1")]))
        var laterSRV = srv
        laterSRV.data = .srv(priority: 0, weight: 0, port: 7_001, target: "a.local.")

        // Order within a set does not matter; identical sets are no conflict.
        #expect(DNSResourceRecord.lexicographicOrder(of: [srv, txt], comparedTo: [txt, srv]) == 0)
        // TXT (16) sorts before SRV (33), so the SRVs decide.
        #expect(DNSResourceRecord.lexicographicOrder(of: [txt, laterSRV], comparedTo: [srv, txt]) > 0)
        #expect(DNSResourceRecord.lexicographicOrder(of: [srv, txt], comparedTo: [laterSRV, txt]) < 0)
        // All equal until one runs out: the longer set is later.
        #expect(DNSResourceRecord.lexicographicOrder(of: [srv, txt], comparedTo: [txt]) > 0)
        #expect(DNSResourceRecord.lexicographicOrder(of: [txt], comparedTo: [txt, srv]) < 0)
    }

    @Test func questionsMatchRecordsByNameTypeAndClass() {
        let record = DNSResourceRecord(name: "TV.local.", cacheFlush: true, ttl: 120, data: .a([10, 0, 0, 1]))
        #expect(DNSQuestion(name: "tv.local.", type: .a).isAnswered(by: record))
        #expect(DNSQuestion(name: "tv.local.", type: .any, unicastResponse: true).isAnswered(by: record))
        #expect(DNSQuestion(name: "tv.local.", type: .a, recordClass: .any).isAnswered(by: record))
        #expect(!DNSQuestion(name: "tv.local.", type: .aaaa).isAnswered(by: record))
        #expect(!DNSQuestion(name: "tv2.local.", type: .a).isAnswered(by: record))
        #expect(!DNSQuestion(name: "tv.local.", type: .a, recordClass: DNSClass(rawValue: 3)).isAnswered(by: record))
    }

    @Test func descriptionsForLogs() {
        #expect(DNSRecordType(rawValue: 99).description == "TYPE99")
        #expect(DNSRecordType.srv.description == "SRV")
        #expect(DNSClass(rawValue: 0x8001) == .internet)
        let record = DNSResourceRecord(name: "tv.local.", cacheFlush: true, ttl: 120, data: .a([10, 0, 0, 1]))
        #expect(record.description == "tv.local. 120 IN A 10.0.0.1 (flush)")
        let unknown = DNSRecordData.unknown(type: DNSRecordType(rawValue: 99), bytes: [0x0A, 0xFF])
        #expect(unknown.description == ##"\# 2 0aff"##)
        #expect(DNSQuestion(name: "tv.local.", type: .any, unicastResponse: true).description == "tv.local. ANY IN QU")
        #expect(DNSParseError.badRData(.srv).description == "malformed SRV record data")
    }
}
