import NIOConcurrencyHelpers
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The session ids of the hellos an agent answered lately, so that a link can drop a replayed
/// hello before it costs a signature (a replay is harmless anyway: see ``SealHandshake``).
/// Ids are forgotten once their hello could no longer be accepted. Safe from any thread.
public final class SealSeenHellos: Sendable {
    private let seen = NIOLockedValueBox([[UInt8]: Date]())
    private let limit: Int

    /// A cache of at most `limit` ids; past it the oldest are dropped first.
    public init(limit: Int = 4096) { self.limit = limit }

    /// Whether `sessionID` is new at `now`; it is remembered either way.
    public func isNew(_ sessionID: [UInt8], now: Date = Date()) -> Bool {
        seen.withLockedValue { seen in
            let forgetAt = now + SealHandshake.maximumAge + SealHandshake.clockSkew
            if seen.count >= limit {
                seen = seen.filter { $0.value > now }
                while seen.count >= limit, let oldest = seen.min(by: { $0.value < $1.value }) { seen[oldest.key] = nil }
            }
            guard seen[sessionID].map({ $0 <= now }) ?? true else { return false }
            seen[sessionID] = forgetAt
            return true
        }
    }
}
