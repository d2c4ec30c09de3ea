import NIOCore

/// When to connect again, apart from any socket: full-jitter backoff, a longer wait after
/// a refusal that retrying will not fix, and takeover loops (two processes with one client
/// id kicking each other off) noticed and said once.
package struct MQTTReconnectStateMachine: Sendable {
    /// Why a connection ended (or never became one).
    package enum Loss: Sendable, Equatable {
        /// Network, broker restart, timeout, malformed bytes: retry with backoff.
        case transient
        /// CONNACK refused for a reason retrying will not fix soon (credentials, not
        /// authorized, banned): wait the cap, never a fast loop.
        case refused
        /// DISCONNECT 0x8E: another connection took this client id.
        case takenOver
        /// The broker closed an established connection without a DISCONNECT. mosquitto 2.0.11
        /// ends a session taken over so (no 0x8E), so it counts towards a takeover loop.
        case closedByBroker
    }

    package enum Action: Sendable, Equatable {
        case none
        /// Connect again after `delay`; `reportTakeoverLoop` is true exactly once, when the
        /// third takeover within a minute happens.
        case reconnect(after: TimeAmount, reportTakeoverLoop: Bool)
    }

    package let base: TimeAmount
    package let cap: TimeAmount
    package private(set) var stopped = true
    package private(set) var attempt = 0
    private var takeovers: [NIODeadline] = []
    private var takeoverLoopReported = false

    package static let takeoverWindow = TimeAmount.minutes(1)
    package static let takeoversForLoop = 3

    package init(base: TimeAmount, cap: TimeAmount) {
        self.base = base
        self.cap = max(cap, base)
    }

    package mutating func start() { stopped = false }

    package mutating func stop() { stopped = true }

    /// A CONNACK with success: the next loss starts the backoff over.
    package mutating func connected() { attempt = 0 }

    /// `random(n)` returns a value in 0...n (injected so tests can pin it).
    package mutating func lost(_ loss: Loss, now: NIODeadline,
                               random: (Int64) -> Int64 = { Int64.random(in: 0...$0) }) -> Action {
        guard !stopped else { return .none }
        defer { attempt += 1 }
        switch loss {
        case .refused:
            return .reconnect(after: cap, reportTakeoverLoop: false)
        case .takenOver, .closedByBroker:
            takeovers.append(now)
            takeovers.removeAll { $0 + Self.takeoverWindow < now }
            if takeovers.count >= Self.takeoversForLoop {
                let report = !takeoverLoopReported
                takeoverLoopReported = true
                return .reconnect(after: cap, reportTakeoverLoop: report)
            }
            return .reconnect(after: jittered(random), reportTakeoverLoop: false)
        case .transient:
            return .reconnect(after: jittered(random), reportTakeoverLoop: false)
        }
    }

    /// random(0, min(cap, base * 2^attempt)).
    private func jittered(_ random: (Int64) -> Int64) -> TimeAmount {
        let shift = min(attempt, 40)
        let (scaled, overflow) = base.nanoseconds.multipliedReportingOverflow(by: Int64(1) << shift)
        let ceiling = overflow ? cap.nanoseconds : min(cap.nanoseconds, scaled)
        return .nanoseconds(random(max(ceiling, 0)))
    }
}
