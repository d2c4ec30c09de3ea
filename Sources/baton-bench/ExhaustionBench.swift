// What a stranger costs an agent, read from outside (its resident memory in /proc): after
// 100,000 connections opened and closed, and while a caller writes requests and never reads
// their answers for 10 s; each beside the agent's memory before.
import BatonWire
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One blocking TCP connection to 127.0.0.1:`port`.
private struct RawSocket {
    let fd: Int32

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            close(fd)
            return nil
        }
    }

    func send(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    func receive() -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        return buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    }

    func end() { close(fd) }
}

private func frameBytes(_ frame: Frame) throws -> [UInt8] {
    var buffer = ByteBuffer()
    try FrameEncoder.encode(frame, into: &buffer, maxFrameSize: FrameLimits.hardLimit)
    return Array(buffer.readableBytesView)
}

/// The two rows: RSS after `connections` opened and closed (half bare, half Hello then
/// close), and RSS after `seconds` of a caller that writes Describes and never reads.
func exhaustionBench(baton: String, connections: Int = 100_000, seconds: Double = 10) throws {
    let mib = Double(1 << 20)
    do {
        let agent = try AgentProcess(baton: baton, insecure: true)
        defer { agent.stop() }
        let port = agent.address.port
        let hello = try frameBytes(.hello(Hello()))
        // Warm: a few connections first, so that what the first ones allocate once is in "before".
        for _ in 0..<100 { if let s = RawSocket(port: port) { _ = s.send(hello); _ = s.receive(); s.end() } }
        let before = agent.residentBytes
        var refused = 0
        let t0 = Date()
        for i in 0..<connections {
            guard let s = RawSocket(port: port) else {
                refused += 1
                continue
            }
            if i % 2 == 1 {
                _ = s.send(hello)
                if s.receive() <= 0 { refused += 1 }
            }
            s.end()
        }
        let elapsed = Date().timeIntervalSince(t0)
        usleep(500_000)
        let after = agent.residentBytes
        row("agent RSS after \(connections / 1000)k connections (bare, Hello)", "\(fmt(Double(after) / mib)) MiB",
            "before \(fmt(Double(before) / mib)) MiB; \(fmt(Double(connections) / elapsed)) connections/s, \(refused) refused",
            "≤ before + 4 MiB", after - before <= 4 << 20)
    }
    do {
        let agent = try AgentProcess(baton: baton, insecure: true)
        defer { agent.stop() }
        let port = agent.address.port
        guard let s = RawSocket(port: port) else { throw BenchError("cannot connect to the agent") }
        defer { s.end() }
        _ = s.send(try frameBytes(.hello(Hello())))
        guard s.receive() > 0 else { throw BenchError("no HelloAck") }
        let before = agent.residentBytes
        _ = fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK)
        var chunk: [UInt8] = []
        var id: UInt64 = 1
        var sent = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if chunk.isEmpty {
                var buffer = ByteBuffer()
                for _ in 0..<8_192 {
                    try FrameEncoder.encode(.describeRequest(requestID: id, timeout: 0), into: &buffer, maxFrameSize: FrameLimits.hardLimit)
                    id += 1
                }
                chunk = Array(buffer.readableBytesView)
            }
            let n = s.send(chunk)
            if n > 0 {
                sent += n
                chunk.removeFirst(n)
            } else {
                usleep(10_000)
            }
        }
        let after = agent.residentBytes
        row("agent RSS, a caller that never reads (\(Int(seconds)) s)", "\(fmt(Double(after) / mib)) MiB",
            "before \(fmt(Double(before) / mib)) MiB; it took \(fmt(Double(sent) / mib)) MiB of Describes, then stopped reading",
            "≤ before + 4 MiB", after - before <= 4 << 20)
    }
}
