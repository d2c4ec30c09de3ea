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

    /// A listening socket on 127.0.0.1 that plays a hostile agent: it answers Hello, then
    /// writes Pings and never reads the Pongs, for at most `limit` seconds. Returns the bytes
    /// the client took and whether its reads stalled (the client stopped reading).
    /// The connection stays open (the caller closes `socket`), so that the script is still
    /// there to be looked at.
    static func floodingAgent(listener fd: Int32, limit: Double) throws -> (sent: Int, stalled: Bool, socket: ConnectionLeakTests.Socket) {
        let client = accept(fd, nil, nil)
        guard client >= 0 else { throw ConnectionLeakTests.LeakTestError("accept: \(String(cString: strerror(errno)))") }
        let socket = ConnectionLeakTests.Socket(fd: client)
        guard socket.receive() > 0 else { throw ConnectionLeakTests.LeakTestError("no Hello") }
        socket.send(ConnectionLeakTests.frame(.helloAck(HelloAck(device: DeviceInfo(id: "00000000-0000-0000-0000-0000000000aa", name: "hostile", kind: .tv)))))
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        var pings: [UInt8] = []
        for nonce in 1...8_192 { pings += ConnectionLeakTests.frame(.ping(nonce: UInt64(nonce))) }
        var sent = 0, chunk = pings
        let deadline = Date().addingTimeInterval(limit)
        var lastProgress = Date()
        while Date() < deadline {
            if chunk.isEmpty { chunk = pings }
            let n = chunk.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
                chunk.removeFirst(n)
                lastProgress = Date()
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                if Date().timeIntervalSince(lastProgress) > 1 { return (sent, true, socket) }
                usleep(5_000)
            } else {
                socket.end()
                throw ConnectionLeakTests.LeakTestError("send: \(String(cString: strerror(errno)))")
            }
        }
        return (sent, false, socket)
    }

    @Test("a script whose agent floods it with Pings and never reads the Pongs: the script stops reading, and grows by a few MiB at most")
    func agentThatNeverReads() async throws {
        // Listening before the script starts, so that its connection waits in the backlog.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let directory = try TemporaryDirectory()
        let script = #"print(baton.launch("127.0.0.1:\#(port)", "media:x", { timeout = 60 }))"#
        let child = try ChildProcess(
            // A generous connect timeout: a loaded runner may be slow to get to the handshake.
            try BatonBinary.get().path, ["run", "--insecure", "--connect-timeout", "30s", "-e", script],
            environment: ChildProcess.environment(["XDG_CONFIG_HOME": directory.file("xdg")]),
            stdout: directory.file("out"), stderr: directory.file("err"))
        defer { child.signal(SIGKILL) }
        async let flooding = onThread { try Self.floodingAgent(listener: listener, limit: 30) }
        // Its memory once it has connected and the flood has begun.
        try await Task.sleep(for: .milliseconds(300))
        let before = Self.residentBytes(child.pid)
        let (sent, stalled, socket) = try await flooding
        defer { socket.end() }
        let after = Self.residentBytes(child.pid)
        #expect(child.isRunning, "the script ended: \(directory.read("err") ?? "")")
        #expect(stalled, "the script read \(sent) bytes of Pings and never stopped: no backpressure")
        #expect(after - before < 24 << 20, "the script grew from \(before >> 20) MiB to \(after >> 20) MiB under \(sent) bytes of Pings")
    }
}
