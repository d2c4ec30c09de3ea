@testable import BatonClient
import BatonCore
import NIOCore
import Testing

/// The relay-to-direct state machine alone: when an attempt is due, and what a late result of
/// an earlier attempt changes (nothing).
@Suite("Direct upgrade state")
struct DirectUpgradeTests {
    let here = [RemoteDevice.Endpoint(host: "10.0.0.2", port: 47300)]
    let moved = [RemoteDevice.Endpoint(host: "192.168.1.9", port: 47300)]
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test func theFirstContactThroughARelayTriesAtOnceAndOnlyOnce() {
        var upgrade = DirectUpgrade()
        let first = upgrade.begin(here, now: start)
        #expect(first != nil)
        #expect(upgrade.state == .trying)
        let second = upgrade.begin(here, now: start)
        #expect(second == nil, "a second call while trying starts no second attempt")
        let taken = upgrade.succeeded(first!, at: here[0])
        #expect(taken)
        #expect(upgrade.state == .direct(here[0]))
        let again = upgrade.begin(here, now: start + .hours(1))
        #expect(again == nil, "a direct link is not tried again")
    }

    @Test func nothingIsTriedWithoutCandidates() {
        var upgrade = DirectUpgrade()
        let attempt = upgrade.begin([], now: start)
        #expect(attempt == nil)
        #expect(upgrade.state == .idle)
    }

    @Test func aFailedAttemptIsRetriedAfterAMinuteThenLessOftenUpToTenMinutes() {
        var upgrade = DirectUpgrade()
        var now = start
        var waits: [TimeAmount] = []
        for _ in 0..<8 {
            let number = upgrade.begin(here, now: now)!
            let wait = upgrade.failed(number, now: now)!
            waits.append(wait)
            let early = upgrade.begin(here, now: now + wait - .milliseconds(1))
            #expect(early == nil, "retried before its time")
            now = now + wait
        }
        #expect(waits == [.seconds(60), .seconds(120), .seconds(240), .seconds(480), .seconds(600), .seconds(600), .seconds(600), .seconds(600)])
    }

    @Test func aLostDirectLinkSendsCallsThroughTheRelayAndIsTriedAgainAfterAMinute() {
        var upgrade = DirectUpgrade()
        let number = upgrade.begin(here, now: start)!
        let taken = upgrade.succeeded(number, at: here[0])
        #expect(taken)
        let wait = upgrade.lost(number, now: start)
        #expect(wait == .seconds(60))
        let early = upgrade.begin(here, now: start + .seconds(59))
        #expect(early == nil)
        let due = upgrade.begin(here, now: start + .seconds(60))
        #expect(due != nil)
    }

    @Test func aDeviceThatMovedIsTriedAtItsNewEndpointsAtOnce() {
        var upgrade = DirectUpgrade()
        let number = upgrade.begin(here, now: start)!
        _ = upgrade.failed(number, now: start)
        let same = upgrade.begin(here, now: start + .seconds(1))
        #expect(same == nil)
        let elsewhere = upgrade.begin(moved, now: start + .seconds(1))
        #expect(elsewhere != nil)
    }

    @Test func theResultOfAnEarlierAttemptChangesNothing() {
        var upgrade = DirectUpgrade()
        let old = upgrade.begin(here, now: start)!
        upgrade.abandon(old)
        let new = upgrade.begin(here, now: start)!
        let lateTaken = upgrade.succeeded(old, at: here[0])
        #expect(!lateTaken, "a late link of an abandoned attempt is not taken")
        let lateFailure = upgrade.failed(old, now: start)
        #expect(lateFailure == nil)
        #expect(upgrade.state == .trying)
        let taken = upgrade.succeeded(new, at: here[0])
        #expect(taken)
        let lateLoss = upgrade.lost(old, now: start)
        #expect(lateLoss == nil, "the loss of an earlier link does not end this one")
        #expect(upgrade.state == .direct(here[0]))
    }
}
