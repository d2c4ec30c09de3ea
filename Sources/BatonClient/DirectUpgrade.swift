import BatonCore
import NIOCore

/// Where one device's move from a relay (the broker) to a direct link stands: idle → trying →
/// direct, or failed until a retry time. Pure state, driven by the client
/// (`BatonClient+Direct.swift`); attempts are numbered, so that the result of an attempt that
/// is no longer the latest changes nothing.
///
/// A failed attempt is tried again after a bounded backoff (``firstRetry``, doubling, at most
/// ``longestRetry``); a direct link that is lost counts as a failure (the relay serves until
/// the retry); candidates that changed (the device moved) are tried at once.
struct DirectUpgrade: Sendable {
    enum State: Sendable, Equatable {
        /// Nothing tried with these candidates yet.
        case idle
        /// An attempt is under way.
        case trying
        /// The device's connection is a direct link to this endpoint.
        case direct(RemoteDevice.Endpoint)
        /// The last attempt failed, or the direct link was lost: nothing is tried before `retryAt`.
        case failed(retryAt: NIODeadline)
    }

    /// How long after a first failure the next attempt may be made.
    static let firstRetry: TimeAmount = .seconds(60)
    /// The longest wait between attempts, however many failed.
    static let longestRetry: TimeAmount = .minutes(10)

    private(set) var state = State.idle
    /// The endpoints the state is about.
    private(set) var candidates: [RemoteDevice.Endpoint] = []
    /// Failures since the last direct link, for the backoff.
    private(set) var failures = 0
    /// The latest attempt's number.
    private(set) var attempt = 0
    /// The relayed connection in the device's slot, which a direct link would replace: a call
    /// on it looks whether an attempt is due.
    var relay: ObjectIdentifier?

    /// Starts an attempt at `candidates` (the target's, now) if one is due: its number, or nil
    /// when none is (one is under way, the link is direct already, the retry time has not
    /// come, or there is nothing to try).
    mutating func begin(_ candidates: [RemoteDevice.Endpoint], now: NIODeadline) -> Int? {
        guard !candidates.isEmpty else { return nil }
        switch state {
        case .trying, .direct: return nil
        case .idle, .failed: break
        }
        if candidates != self.candidates {
            // A device that moved: its new endpoints are worth trying at once.
            self.candidates = candidates
            failures = 0
            state = .idle
        }
        if case .failed(let retryAt) = state, now < retryAt { return nil }
        attempt += 1
        state = .trying
        return attempt
    }

    /// Attempt `number` made a direct link to `endpoint`: whether it still counts (else the
    /// link is not wanted).
    mutating func succeeded(_ number: Int, at endpoint: RemoteDevice.Endpoint) -> Bool {
        guard number == attempt, state == .trying else { return false }
        state = .direct(endpoint)
        failures = 0
        return true
    }

    /// Attempt `number` failed: how long until the next, or nil if it no longer counts.
    mutating func failed(_ number: Int, now: NIODeadline) -> TimeAmount? {
        guard number == attempt, state == .trying else { return nil }
        return backOff(now)
    }

    /// The direct link attempt `number` made was lost: how long until the next attempt, or nil
    /// if it no longer counts.
    mutating func lost(_ number: Int, now: NIODeadline) -> TimeAmount? {
        guard number == attempt, case .direct = state else { return nil }
        return backOff(now)
    }

    /// Attempt `number` is given up without a verdict (the slot was being filled anew): the
    /// next relayed connection tries again at once.
    mutating func abandon(_ number: Int) {
        guard number == attempt else { return }
        state = .idle
    }

    private mutating func backOff(_ now: NIODeadline) -> TimeAmount {
        let delay = Self.delay(afterFailures: failures)
        failures += 1
        state = .failed(retryAt: now + delay)
        return delay
    }

    /// The wait after `failures` earlier failures in a row: ``firstRetry`` doubled each time,
    /// at most ``longestRetry``.
    static func delay(afterFailures failures: Int) -> TimeAmount {
        let factor = Int64(1) << Int64(min(failures, 16))
        return .nanoseconds(min(firstRetry.nanoseconds * factor, longestRetry.nanoseconds))
    }
}
