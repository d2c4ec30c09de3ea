import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// How many join attempts an agent takes: a token bucket per caller address and one for all,
/// so a stranger's flood is refused before any work (no folder read, no code hashed) and a
/// device with a real code, from another address, still gets in. Guessing a 56-bit code was
/// hopeless anyway; this keeps the flood from costing the agent its CPU and its log.
/// Confined to the agent's loop.
final class JoinLimiter {
    /// Attempts one address may make at once, and how often it gets one back: 5 a minute.
    static let perAddress = (burst: 5.0, perSecond: 5.0 / 60)
    /// Attempts all addresses together may make at once, and their rate: 30 a minute.
    static let inAll = (burst: 30.0, perSecond: 30.0 / 60)
    /// Addresses remembered at most; past it the full buckets are forgotten, and if none is
    /// full a new address starts with an empty one.
    static let maxAddresses = 4096

    private struct Bucket {
        var tokens: Double
        var updated: NIODeadline

        /// Takes a token if one is there, after refilling at `rate` up to `burst`.
        mutating func take(now: NIODeadline, burst: Double, rate: Double) -> Bool {
            let elapsed = Double((now - updated).nanoseconds) / 1e9
            tokens = min(burst, tokens + max(0, elapsed) * rate)
            updated = now
            guard tokens >= 1 else { return false }
            tokens -= 1
            return true
        }

        func isFull(now: NIODeadline, burst: Double, rate: Double) -> Bool {
            tokens + Double((now - updated).nanoseconds) / 1e9 * rate >= burst
        }
    }

    private var addresses: [String: Bucket] = [:]
    private var all: Bucket

    init(now: NIODeadline = .now()) {
        all = Bucket(tokens: Self.inAll.burst, updated: now)
    }

    /// The bucket `address` counts against: an IPv4 address itself; an IPv6 address's /64,
    /// which one home or host usually has whole (one address each would be one bucket each).
    static func key(_ address: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let plain = address.split(separator: "%").first.map(String.init) ?? address
        guard address.contains(":"), inet_pton(AF_INET6, plain, &bytes) == 1 else { return address }
        // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }

    /// Whether a join attempt from `address` may go on; nil if so, else why not (for the caller).
    func admit(_ caller: String, now: NIODeadline = .now()) -> String? {
        let address = Self.key(caller)
        if addresses[address] == nil {
            if addresses.count >= Self.maxAddresses {
                addresses = addresses.filter { !$0.value.isFull(now: now, burst: Self.perAddress.burst, rate: Self.perAddress.perSecond) }
            }
            let tokens = addresses.count < Self.maxAddresses ? Self.perAddress.burst : 0
            addresses[address] = Bucket(tokens: tokens, updated: now)
        }
        guard addresses[address]!.take(now: now, burst: Self.perAddress.burst, rate: Self.perAddress.perSecond) else {
            return "too many join attempts from \(address): at most \(Int(Self.perAddress.burst)) a minute; try again in a minute"
        }
        guard all.take(now: now, burst: Self.inAll.burst, rate: Self.inAll.perSecond) else {
            return "too many join attempts: at most \(Int(Self.inAll.burst)) a minute in all; try again in a minute"
        }
        return nil
    }
}
