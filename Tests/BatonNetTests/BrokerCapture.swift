import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One message a ``BrokerCapture`` received: its topic, its payload's exact bytes, and whether
/// it came as a retained message (one the broker held before the capture subscribed).
struct BrokerMessage: Equatable, Sendable, CustomStringConvertible {
    var topic: String
    var payload: [UInt8]
    var retained: Bool

    var description: String {
        "\(topic)\(retained ? " (retained)" : ""): \(payload.count) bytes \(payload.prefix(64).map { String(format: "%02x", $0) }.joined())"
    }
}

/// A `mosquitto_sub` recording what crosses a broker into a file, one line per message
/// (`M <retained> <payload in hex> <topic>`, so binary payloads are kept exactly), among its
/// debug lines (`-d`).
final class BrokerCapture: Sendable {
    /// The `-F` format of the message lines.
    static let format = "M %r %x %t"

    let broker: String
    let topic: String
    let process: ChildProcess
    private let stdout: String
    private let stderr: String

    init(broker: String, topic: String, process: ChildProcess, stdout: String, stderr: String) {
        self.broker = broker
        self.topic = topic
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Every message recorded so far, in the order received.
    func captured() -> [BrokerMessage] {
        let text = NamespacedAgent.read(stdout)
        // Only whole lines: the last may still be being written.
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("M ") else { return nil }
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let payload = Self.bytes(fromHex: fields[2]) else { return nil }
            return BrokerMessage(topic: String(fields[3]), payload: payload, retained: fields[1] == "1")
        }
    }

    /// Whether any payload recorded so far holds `text`'s UTF-8 bytes anywhere in it.
    func payloadsContain(_ text: String) -> Bool { payloadsContain(bytes: Array(text.utf8)) }

    /// Whether any payload recorded so far holds `bytes` anywhere in it.
    func payloadsContain(bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        return captured().contains { message in
            message.payload.count >= bytes.count
                && (0...(message.payload.count - bytes.count)).contains { message.payload[$0..<($0 + bytes.count)].elementsEqual(bytes) }
        }
    }

    /// Whether any topic recorded so far holds `text`.
    func topicsContain(_ text: String) -> Bool { captured().contains { $0.topic.contains(text) } }

    /// The first message `condition` accepts, waiting for it up to `limit` seconds (a guard
    /// against hangs, not a timing assertion); throws with the transcript when none comes.
    @discardableResult
    func waitFor(
        _ what: String, within limit: Double = 30, _ condition: (BrokerMessage) -> Bool
    ) async throws -> BrokerMessage {
        var found: BrokerMessage?
        _ = await eventually(within: limit) {
            found = captured().first(where: condition)
            return found != nil || !process.isRunning
        }
        guard let found else {
            throw NamespacePair.Failure("""
                the capture of \(topic) on \(broker) \
                \(process.isRunning ? "did not receive \(what) within \(Int(limit)) s" : "exited with \(process.exit.value ?? -1)"):
                \(transcript)
                """)
        }
        return found
    }

    /// Returns once the broker granted the subscription (mosquitto_sub's `Subscribed (mid: 1):
    /// QOS` line); throws with the transcript if it refused it (a reason code of 128 or more),
    /// the client ended, or 15 s passed.
    func waitUntilSubscribed() async throws {
        var granted: Int?
        _ = await eventually(within: 15) {
            let line = NamespacedAgent.read(stdout).split(separator: "\n").first { $0.hasPrefix("Subscribed (mid: ") }
            granted = line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) }
            return granted != nil || !process.isRunning
        }
        guard let granted, granted < 128, process.isRunning else {
            process.signal(SIGKILL)
            throw NamespacePair.Failure("mosquitto_sub was not subscribed to \(topic) on \(broker):\n\(transcript)")
        }
    }

    /// Ends the capture (what it recorded stays readable).
    func stop() async {
        // SIGKILL: a SIGTERM stays blocked in it (inherited from the test process), and every
        // message line is on disk already (line-buffered).
        process.signal(SIGKILL)
        _ = await process.exit.wait(within: 5)
    }

    /// Everything it printed, for failure messages.
    var transcript: String {
        "--- stdout ---\n\(NamespacedAgent.read(stdout))--- stderr ---\n\(NamespacedAgent.read(stderr))---"
    }

    private static func bytes(fromHex hex: Substring) -> [UInt8]? {
        guard hex.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            result.append(byte)
            index = next
        }
        return result
    }
}
