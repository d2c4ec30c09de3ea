@testable import BatonNet
import BatonCore
import BatonWire
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A caller that writes requests and never reads their answers: the agent stops reading from
/// it once its unsent answers pass the channel's high-water mark, so the caller's writes stall
/// and the agent's memory stays where it was; another caller is served all the while.
@Suite("Backpressure", .timeLimit(.minutes(2)))
struct BackpressureTests {
    /// The agent's resident memory, from /proc.
    static func residentBytes(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Writes DescribeRequests (five bytes each, answered by a few hundred) without ever
    /// reading, for at most `limit` seconds; returns the bytes the socket took and whether the
    /// writes stalled (nothing taken for a whole second: the agent stopped reading).
    static func flood(port: Int, limit: Double) throws -> (sent: Int, stalled: Bool) {
        let socket = try ConnectionLeakTests.Socket(port: port)
        defer { socket.end() }
        socket.send(ConnectionLeakTests.frame(.hello(Hello())))
        guard socket.receive() > 0 else { throw ConnectionLeakTests.LeakTestError("no HelloAck") }
        _ = fcntl(socket.fd, F_SETFL, fcntl(socket.fd, F_GETFL) | O_NONBLOCK)
        var nextID: UInt64 = 1
        var sent = 0
        let deadline = Date().addingTimeInterval(limit)
        var lastProgress = Date()
        var chunk: [UInt8] = []
        while Date() < deadline {
            if chunk.isEmpty {
                var buffer = ByteBuffer()
                for _ in 0..<8_192 {
                    try FrameEncoder.encode(.describeRequest(requestID: nextID, timeout: 0), into: &buffer, maxFrameSize: FrameLimits.hardLimit)
                    nextID += 1
                }
                chunk = Array(buffer.readableBytesView)
            }
            let n = chunk.withUnsafeBytes { Glibc.send(socket.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
                chunk.removeFirst(n)
                lastProgress = Date()
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                if Date().timeIntervalSince(lastProgress) > 1 { return (sent, true) }
                usleep(5_000)
            } else {
                throw ConnectionLeakTests.LeakTestError("send: \(String(cString: strerror(errno)))")
            }
        }
        return (sent, false)
    }

    @Test("a caller that writes Describes and never reads: its writes stall, the agent grows by a few MiB at most, another caller is served")
    func callerThatNeverReads() async throws {
        try await withAgent(arguments: ["--insecure"], account: nil) { agent in
            let client = makeClient(security: .insecure)
            defer { client.shutdown() }
            // Warm: the agent's own buffers and Lua state as a served caller leaves them.
            _ = try await client.describe(agent.address).get()
            let before = Self.residentBytes(agent.pid)
            async let flooding = onThread { try Self.flood(port: agent.address.port, limit: 30) }
            // Served while the flood goes on.
            try await Task.sleep(for: .milliseconds(500))
            let described = try await client.describe(agent.address).get()
            #expect(described.0.id == agent.id)
            let (sent, stalled) = try await flooding
            let after = Self.residentBytes(agent.pid)
            #expect(stalled, "the agent read \(sent) bytes of requests and never stopped: no backpressure")
            #expect(after - before < 24 << 20, "the agent grew from \(before >> 20) MiB to \(after >> 20) MiB under \(sent) bytes of unread requests")
            // Still served after.
            _ = try await client.describe(agent.address).get()
        }
    }
}
