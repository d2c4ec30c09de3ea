import Logging
import NIOCore

/// Where an agent's connections tell of callers refused, connections reset and peers that broke
/// the protocol: the first few of an interval are logged at once, in full; the rest are counted
/// and logged as one summary line at its end, so that a stranger making thousands of connections
/// a second cannot flood the log (at most ``fullLines`` + 1 lines an interval). Confined to the
/// server's loop.
final class RefusalLog: @unchecked Sendable {
    /// What happened to a connection.
    enum Kind: String, CaseIterable {
        case refused = "refused callers"
        case busy = "connections refused for want of room"
        case reset = "connections lost"
        case broken = "callers that broke the protocol"
        case timedOut = "callers that did not finish their handshake in time"
        case join = "join attempts refused"
        case launch = "launches refused to other accounts"
    }

    private let logger: Logger
    private let eventLoop: any EventLoop
    private let interval: TimeAmount
    private var counts: [Kind: Int] = [:]
    private var last: (kind: Kind, peer: String, detail: String)?
    /// When the current interval began, and how many lines were logged in full in it.
    private var intervalStart: NIODeadline?
    private var logged = 0
    private var summary: Scheduled<Void>?

    /// The interval: at most ``fullLines`` lines in full, then one summary line.
    static let defaultInterval: TimeAmount = .seconds(10)
    /// How many of an interval's events are logged in full.
    static let fullLines = 5

    init(logger: Logger, eventLoop: any EventLoop, interval: TimeAmount = defaultInterval) {
        self.logger = logger
        self.eventLoop = eventLoop
        self.interval = interval
    }

    /// One connection's trouble: `message` is the line it would have had (`refused a caller`),
    /// `peer` and `detail` what it says.
    func note(_ kind: Kind, _ message: Logger.Message, peer: String, detail: String) {
        eventLoop.assertInEventLoop()
        let now = eventLoop.now
        if intervalStart.map({ now - $0 >= interval }) ?? true, counts.isEmpty {
            intervalStart = now
            logged = 0
        }
        if logged < Self.fullLines, counts.isEmpty {
            logged += 1
            logger.warning(message, metadata: ["peer": "\(peer)", "reason": "\(detail)"])
            return
        }
        counts[kind, default: 0] += 1
        last = (kind, peer, detail)
        guard summary == nil else { return }
        summary = eventLoop.scheduleTask(deadline: (intervalStart ?? now) + interval) { [self] in
            summary = nil
            flush()
        }
    }

    /// Logs what was counted since the last line, as one line.
    func flush() {
        guard !counts.isEmpty else { return }
        let parts = Kind.allCases.compactMap { kind in counts[kind].map { "\($0) \(kind.rawValue)" } }
        var metadata: Logger.Metadata = ["interval": "\(interval.nanoseconds / 1_000_000_000) s"]
        if let last {
            metadata["last_peer"] = "\(last.peer)"
            metadata["last_reason"] = "\(last.detail)"
        }
        logger.warning("and since: \(parts.joined(separator: ", "))", metadata: metadata)
        counts = [:]
        last = nil
        // A new interval: its first few in full again.
        intervalStart = eventLoop.now
        logged = 0
    }

    /// Stops the summary to come, logging what it would have said.
    func close() {
        summary?.cancel()
        summary = nil
        flush()
    }
}
