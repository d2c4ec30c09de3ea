import Logging
import NIOCore

/// Where an agent's connections tell of callers refused, connections reset and peers that broke
/// the protocol: the first of a quiet spell is logged at once, in full; the rest are counted and
/// logged as one summary line an interval, so that a stranger making thousands of connections
/// a second cannot flood the log. Confined to the server's loop.
final class RefusalLog: @unchecked Sendable {
    /// What happened to a connection.
    enum Kind: String, CaseIterable {
        case refused = "refused callers"
        case busy = "connections refused for want of room"
        case reset = "connections lost"
        case broken = "callers that broke the protocol"
        case timedOut = "callers that did not finish their handshake in time"
    }

    private let logger: Logger
    private let eventLoop: any EventLoop
    private let interval: TimeAmount
    private var counts: [Kind: Int] = [:]
    private var last: (kind: Kind, peer: String, detail: String)?
    private var lastLine: NIODeadline?
    private var summary: Scheduled<Void>?

    /// How often a summary may be logged: one line per interval at most, after the first.
    static let defaultInterval: TimeAmount = .seconds(10)

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
        if counts.isEmpty, lastLine.map({ now - $0 >= interval }) ?? true {
            lastLine = now
            logger.warning(message, metadata: ["peer": "\(peer)", "reason": "\(detail)"])
            return
        }
        counts[kind, default: 0] += 1
        last = (kind, peer, detail)
        guard summary == nil else { return }
        let due = (lastLine ?? now) + interval
        summary = eventLoop.scheduleTask(deadline: due) { [self] in
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
        lastLine = eventLoop.now
    }

    /// Stops the summary to come, logging what it would have said.
    func close() {
        summary?.cancel()
        summary = nil
        flush()
    }
}
