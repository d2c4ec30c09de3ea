@testable import BatonDiscovery
import NIOCore
import Testing

private let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
private let host: DNSName = "host.local."

private func address(_ last: UInt8, ttl: UInt32 = 120, flush: Bool = true) -> DNSResourceRecord {
    DNSResourceRecord(name: host, cacheFlush: flush, ttl: ttl, data: .a([10, 0, 0, last]))
}

private func seconds(_ value: Double) -> TimeAmount {
    .nanoseconds(Int64(value * 1e9))
}

@Suite("mDNS cache")
struct MDNSCacheTests {
    @Test func aRecordLivesForItsTTL() {
        var cache = MDNSCache()
        let added = cache.insert(address(1), interfaceIndex: 2, at: t0, jitter: 0)
        #expect(added)
        let refreshed = cache.insert(address(1), interfaceIndex: 2, at: t0, jitter: 0)
        #expect(!refreshed, "a refresh is no visible change")
        let tooEarly = cache.removeExpired(at: t0 + seconds(119.9))
        #expect(tooEarly.isEmpty)
        let removed = cache.removeExpired(at: t0 + .seconds(120))
        #expect(removed.map(\.1) == [.expired])
        #expect(cache.count == 0)
    }

    @Test func refreshesAreDueAt80859095PercentOfTheTTL() {
        var cache = MDNSCache()
        cache.insert(address(1, ttl: 100), interfaceIndex: 2, at: t0, jitter: 0.01)
        #expect(cache.nextDeadline == t0 + .seconds(81))
        var due: [Double] = []
        for tenth in 0...1_000 {
            let now = t0 + .milliseconds(Int64(tenth) * 100)
            if !cache.dueRefreshes(at: now).isEmpty { due.append(Double(tenth) / 10) }
        }
        #expect(due == [81, 86, 91, 96])
        #expect(cache.nextDeadline == t0 + .seconds(100))
    }

    @Test func aGoodbyeRemovesTheRecordOneSecondLater() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        let saidGoodbye = cache.insert(address(1, ttl: 0), interfaceIndex: 2, at: t0 + .seconds(10))
        #expect(saidGoodbye)
        #expect(cache.entries(named: host, type: .a).first?.fate == .goodbye)
        let beforeTheSecond = cache.removeExpired(at: t0 + seconds(10.9))
        #expect(beforeTheSecond.isEmpty)
        let afterTheSecond = cache.removeExpired(at: t0 + .seconds(11))
        #expect(afterTheSecond.map(\.1) == [.goodbye])
    }

    @Test func aGoodbyeForAnUnknownRecordIsIgnored() {
        var cache = MDNSCache()
        let changed = cache.insert(address(1, ttl: 0), interfaceIndex: 2, at: t0)
        #expect(!changed)
        #expect(cache.count == 0)
    }

    @Test func theCacheFlushBitRetiresOlderRecordsOfTheSetOnThatInterfaceOnly() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        cache.insert(address(1), interfaceIndex: 3, at: t0)
        cache.insert(address(2), interfaceIndex: 2, at: t0 + .seconds(5))
        let flushed = cache.entries(named: host, type: .a).filter { $0.fate == .flushed }
        #expect(flushed.map(\.interfaceIndex) == [2])
        let removed = cache.removeExpired(at: t0 + .seconds(6))
        #expect(removed.map(\.1) == [.flushed])
        #expect(Set(cache.entries(named: host, type: .a).map(\.interfaceIndex)) == [2, 3])
    }

    @Test func recordsOfOneSetArrivingWithinASecondAreKept() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        cache.insert(address(2), interfaceIndex: 2, at: t0 + seconds(0.5))  // the same set, next packet
        #expect(cache.entries(named: host, type: .a).allSatisfy { $0.fate == nil })
    }

    @Test func withoutTheFlushBitOlderRecordsStay() {
        var cache = MDNSCache()
        cache.insert(address(1, flush: false), interfaceIndex: 2, at: t0)
        cache.insert(address(2, flush: false), interfaceIndex: 2, at: t0 + .seconds(5))
        #expect(cache.entries(named: host, type: .a).count == 2)
        #expect(cache.entries(named: host, type: .a).allSatisfy { $0.fate == nil })
    }

    @Test func knownAnswersAreThoseWithMoreThanHalfTheirTTLLeft() {
        var cache = MDNSCache()
        let ptr = DNSResourceRecord(name: .batonService, ttl: 100, data: .ptr("A._baton._tcp.local."))
        cache.insert(ptr, interfaceIndex: 2, at: t0)
        #expect(cache.knownAnswers(named: .batonService, type: .ptr, interfaceIndex: 2, at: t0 + .seconds(10)).map(\.ttl) == [90])
        #expect(cache.knownAnswers(named: .batonService, type: .ptr, interfaceIndex: 3, at: t0).isEmpty)
        #expect(cache.knownAnswers(named: .batonService, type: .ptr, interfaceIndex: 2, at: t0 + .seconds(50)).isEmpty)
    }

    @Test func aFullCacheDropsNewRecords() {
        var cache = MDNSCache(capacity: 2)
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        cache.insert(address(2, flush: false), interfaceIndex: 2, at: t0)
        let added = cache.insert(address(3, flush: false), interfaceIndex: 2, at: t0)
        #expect(!added)
        #expect(cache.count == 2 && cache.droppedForCapacity == 1)
        // A record already there is still refreshed.
        cache.insert(address(1), interfaceIndex: 2, at: t0 + .seconds(50))
        let expired = cache.removeExpired(at: t0 + .seconds(121))
        #expect(expired.count == 1)
    }

    @Test func losingAnInterfaceTakesItsRecords() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        cache.insert(address(1), interfaceIndex: 3, at: t0)
        let left = cache.removeInterface(2)
        #expect(left.count == 1)
        #expect(cache.entries(named: host, type: .a).map(\.interfaceIndex) == [3])
    }
}

@Suite("mDNS cache: records of legacy unicast replies")
struct MDNSCacheLegacyReplyTests {
    @Test func aLegacyRecordFillsAGapAndLivesForItsTTL() {
        var cache = MDNSCache()
        let added = cache.insert(address(1, ttl: 10, flush: false), interfaceIndex: 2, at: t0, fromLegacyReply: true)
        #expect(added)
        #expect(cache.entries(named: host, type: .a).first?.isFromLegacyReply == true)
        #expect(cache.removeExpired(at: t0 + seconds(9.9)).isEmpty)
        #expect(cache.removeExpired(at: t0 + .seconds(10)).map(\.1) == [.expired])
    }

    @Test func aLegacyRecordNeverReplacesOneMulticastTaughtUs() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0, jitter: 0)
        let changed = cache.insert(address(1, ttl: 10, flush: false), interfaceIndex: 2, at: t0 + .seconds(1), fromLegacyReply: true)
        #expect(!changed)
        #expect(cache.entries(named: host, type: .a).first?.expires == t0 + .seconds(120))
        #expect(cache.entries(named: host, type: .a).first?.isFromLegacyReply == false)
    }

    @Test func multicastReplacesALegacyRecord() {
        var cache = MDNSCache()
        cache.insert(address(1, ttl: 10, flush: false), interfaceIndex: 2, at: t0, fromLegacyReply: true)
        let changed = cache.insert(address(1), interfaceIndex: 2, at: t0 + .seconds(1))
        #expect(!changed, "the same record: no visible change")
        #expect(cache.entries(named: host, type: .a).first?.isFromLegacyReply == false)
        #expect(cache.entries(named: host, type: .a).first?.expires == t0 + .seconds(121))
    }

    @Test func aLegacyRecordIsNoGoodbyeNorCacheFlushNorAKnownAnswer() {
        var cache = MDNSCache()
        cache.insert(address(1), interfaceIndex: 2, at: t0)
        let saidGoodbye = cache.insert(
            address(1, ttl: 0, flush: false), interfaceIndex: 2, at: t0 + .seconds(5), fromLegacyReply: true)
        #expect(!saidGoodbye)
        // The cache-flush bit a legacy reply must not carry (§6.7) is ignored if it does.
        cache.insert(address(2, ttl: 10, flush: true), interfaceIndex: 2, at: t0 + .seconds(5), fromLegacyReply: true)
        #expect(cache.entries(named: host, type: .a).allSatisfy { $0.fate == nil })
        let known = cache.knownAnswers(named: host, type: .a, interfaceIndex: 2, at: t0 + .seconds(6))
        #expect(known.map(\.data) == [.a([10, 0, 0, 1])])
    }
}
