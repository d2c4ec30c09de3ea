@testable import BatonDiscovery
import NIOCore
import Testing

private let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

/// The PTR of fake instance `number` of `_baton._tcp`.
private func fake(_ number: Int, ttl: UInt32 = 4500) -> DNSResourceRecord {
    DNSResourceRecord(name: .batonService, ttl: ttl, data: .ptr(DNSName("Fake \(number)._baton._tcp.local.")!))
}

/// An address record of host `number`.
private func address(_ number: Int) -> DNSResourceRecord {
    DNSResourceRecord(name: DNSName("host-\(number).local.")!, cacheFlush: true, ttl: 120, data: .a([10, 0, 0, 1]))
}

@Suite("mDNS cache against a flood")
struct MDNSCacheQuotaTests {
    @Test func aTTLOf2To31SecondsIsCutTo75Minutes() {
        var cache = MDNSCache()
        cache.insert(fake(1, ttl: 1 << 31), interfaceIndex: 2, at: t0, jitter: 0, sender: "10.0.0.66")
        #expect(cache.entries(named: .batonService, type: .ptr).first?.record.ttl == 4_500)
        #expect(cache.removeExpired(at: t0 + .seconds(4_499)).isEmpty)
        #expect(cache.removeExpired(at: t0 + .seconds(4_500)).count == 1)
    }

    @Test func aSenderOverItsQuotaLosesItsRecordsAndIsNotHeardForAMinute() {
        var cache = MDNSCache(capacity: 400, senderQuota: 100)
        for number in 0..<100 {
            let inserted1 = cache.insert(fake(number), interfaceIndex: 2, at: t0, sender: "10.0.0.66")
            #expect(inserted1)
        }
        #expect(cache.count == 100)
        let over = cache.insert(fake(100), interfaceIndex: 2, at: t0, sender: "10.0.0.66")
        #expect(!over)
        #expect(cache.count == 0, "the flooder's records go")
        #expect(cache.takeEvicted().count == 100)
        #expect(cache.takeNewFlooders() == ["10.0.0.66"])
        #expect(cache.takeNewFlooders().isEmpty, "named once")
        // Not heard for a minute, whatever it sends; others are.
        let inserted2 = cache.insert(fake(1), interfaceIndex: 2, at: t0 + .seconds(59), sender: "10.0.0.66")
        #expect(!inserted2)
        let inserted3 = cache.insert(address(1), interfaceIndex: 2, at: t0 + .seconds(59), sender: "10.0.0.7")
        #expect(inserted3)
        let inserted4 = cache.insert(fake(1), interfaceIndex: 2, at: t0 + .seconds(60), sender: "10.0.0.66")
        #expect(inserted4)
        #expect(cache.count == 2)
    }

    @Test func aFullCacheMakesRoomForANewcomerFromTheSenderHoldingMost() {
        var cache = MDNSCache(capacity: 100, senderQuota: 60, serviceTypeQuota: 100)
        for number in 0..<60 {
            cache.insert(fake(number), interfaceIndex: 2, at: t0 + .milliseconds(Int64(number)), sender: "10.0.0.66")
        }
        for number in 60..<100 {
            cache.insert(fake(number), interfaceIndex: 2, at: t0, sender: "10.0.0.67")
        }
        #expect(cache.count == 100)
        // A real device's address: in, in place of the biggest sender's oldest record.
        let inserted5 = cache.insert(address(1), interfaceIndex: 2, at: t0 + .seconds(1), sender: "10.0.0.7")
        #expect(inserted5)
        #expect(cache.count == 100)
        let evicted = cache.takeEvicted()
        #expect(evicted.map(\.sender) == ["10.0.0.66"])
        #expect(evicted.first?.record == fake(0))
        // The biggest sender's own newcomer is the one dropped.
        let inserted6 = cache.insert(fake(200), interfaceIndex: 2, at: t0 + .seconds(1), sender: "10.0.0.66")
        #expect(!inserted6)
        #expect(cache.count == 100)
    }

    @Test func aServiceTypeAtItsQuotaLeavesRoomForAddresses() {
        var cache = MDNSCache(capacity: 100, senderQuota: 100, serviceTypeQuota: 10)
        for number in 0..<10 {
            cache.insert(fake(number), interfaceIndex: 2, at: t0, sender: "10.0.0.66")
        }
        // More instances from the same sender: dropped, the type is full of its records.
        let inserted7 = cache.insert(fake(10), interfaceIndex: 2, at: t0, sender: "10.0.0.66")
        #expect(!inserted7)
        // Another sender's instance gets in, in place of one of the biggest sender's.
        let inserted8 = cache.insert(fake(11), interfaceIndex: 2, at: t0, sender: "10.0.0.7")
        #expect(inserted8)
        // Addresses are not the type's.
        let inserted9 = cache.insert(address(1), interfaceIndex: 2, at: t0, sender: "10.0.0.66")
        #expect(inserted9)
        #expect(cache.entries(named: .batonService, type: .ptr).count == 10)
        #expect(cache.count == 11)
    }

    @Test func aRecordRefreshedByAnotherSenderCountsAgainstThatOne() {
        var cache = MDNSCache(capacity: 400, senderQuota: 2)
        cache.insert(fake(1), interfaceIndex: 2, at: t0, sender: "10.0.0.1")
        cache.insert(fake(2), interfaceIndex: 2, at: t0, sender: "10.0.0.1")
        cache.insert(fake(1), interfaceIndex: 2, at: t0, sender: "fe80::1")
        // 10.0.0.1 holds one now, so another is within its quota.
        let inserted10 = cache.insert(fake(3), interfaceIndex: 2, at: t0, sender: "10.0.0.1")
        #expect(inserted10)
        #expect(cache.takeNewFlooders().isEmpty)
        #expect(cache.count == 3)
    }
}
