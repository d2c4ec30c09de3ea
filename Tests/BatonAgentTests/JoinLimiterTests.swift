@testable import BatonAgent
import NIOCore
import Testing

/// How many join attempts an agent takes, per address and in all, on a clock the test moves.
@Suite("Join attempts limited")
struct JoinLimiterTests {
    let start = NIODeadline.now()

    @Test("5 at once from one address, then 1 every 12 s; another address has its own 5")
    func perAddress() {
        let limiter = JoinLimiter(now: start)
        for _ in 0..<5 { #expect(limiter.admit("192.0.2.1", now: start) == nil) }
        let refused = limiter.admit("192.0.2.1", now: start)
        #expect(refused == "too many join attempts from 192.0.2.1: at most 5 a minute; try again in a minute")
        #expect(limiter.admit("192.0.2.2", now: start) == nil)
        #expect(limiter.admit("192.0.2.1", now: start + .seconds(11)) != nil)
        #expect(limiter.admit("192.0.2.1", now: start + .seconds(13)) == nil)
        #expect(limiter.admit("192.0.2.1", now: start + .seconds(13)) != nil)
    }

    @Test("addresses of one IPv6 /64 share a bucket; an IPv4-mapped address is its IPv4 address")
    func ipv6Prefixes() {
        #expect(JoinLimiter.key("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(JoinLimiter.key("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(JoinLimiter.key("fe80::1%eth0") == "fe80:0:0:0::/64")
        #expect(JoinLimiter.key("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(JoinLimiter.key("192.0.2.7") == "192.0.2.7")
        let limiter = JoinLimiter(now: start)
        for n in 0..<5 { #expect(limiter.admit("2001:db8:1:2::\(n + 1)", now: start) == nil) }
        #expect(limiter.admit("2001:db8:1:2::99", now: start) != nil)
        #expect(limiter.admit("2001:db8:1:3::1", now: start) == nil)
    }

    @Test("30 at once in all, then 1 every 2 s, however many addresses ask")
    func inAll() {
        let limiter = JoinLimiter(now: start)
        for n in 0..<30 { #expect(limiter.admit("198.51.100.\(n)", now: start) == nil) }
        let refused = limiter.admit("203.0.113.1", now: start)
        #expect(refused == "too many join attempts: at most 30 a minute in all; try again in a minute")
        #expect(limiter.admit("203.0.113.1", now: start + .seconds(3)) == nil)
    }
}
