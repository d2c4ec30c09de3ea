import BatonWire
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// send(2) without SIGPIPE.
private func sendBytes(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
    Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #else
    Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
    #endif
}

/// Runs blocking `work` on a thread of its own, off Swift's cooperative pool.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
        }.start()
    }
}

/// A plain blocking TCP socket to an agent, for speaking the protocol by hand (and badly).
/// Reads give up after `readTimeout` seconds so a test can never hang on one.
final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var received: [UInt8] = []
    private var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))

    /// How long one ``read()`` may wait in all.
    let readTimeout: Double

    init(port: Int, readTimeout: Double = 10) throws {
        self.readTimeout = readTimeout
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentFailure("socket: errno \(errno)") }
        // Short waits, so a read checks its deadline often; sends never block for long.
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sendTimeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw AgentFailure("connect to port \(port): errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Writes `bytes` as they are (send errors, e.g. after the agent closed, are ignored).
    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { sendBytes(fd, $0) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Writes `frame`, framed.
    func send(_ frame: Baton_V1_Frame) {
        send(Self.encode(frame))
    }

    /// `frame` as it goes on the wire: varint length, then the serialized Frame.
    static func encode(_ frame: Baton_V1_Frame) -> [UInt8] {
        var buffer = ByteBuffer()
        try! FrameEncoder.encode(frame, into: &buffer, maxFrameSize: FrameLimits.hardLimit)
        return buffer.readBytes(length: buffer.readableBytes)!
    }

    /// Closes the sending direction: the agent reads end of file.
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    enum ReadResult: Equatable {
        case frame(Baton_V1_Frame)
        /// The agent closed the connection (end of file or reset).
        case closed
        /// Nothing arrived in time.
        case timedOut
        /// Bytes arrived that are not a frame.
        case garbage(String)
    }

    /// The next frame, or why there is none.
    func read() -> ReadResult {
        let deadline = Date().addingTimeInterval(readTimeout)
        while true {
            var buffer = ByteBuffer(bytes: received)
            do {
                if let event = try decoder.decode(buffer: &buffer) {
                    received = buffer.readBytes(length: buffer.readableBytes) ?? []
                    switch event {
                    case .frame(let frame): return .frame(frame)
                    case .oversized(let o): return .garbage("\(o)")
                    }
                }
            } catch {
                return .garbage("\(error)")
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                received += chunk[..<n]
            } else if n == 0 || errno == ECONNRESET {
                return .closed
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                if Date() > deadline { return .timedOut }
            } else {
                return .closed
            }
        }
    }

    /// Every frame until the agent closes (or `read` gives up); the last element says how it
    /// ended.
    func readUntilClosed() -> [ReadResult] {
        var results: [ReadResult] = []
        while true {
            let next = read()
            results.append(next)
            if case .frame = next { continue }
            return results
        }
    }

    /// Says Hello (protocol version 1 unless given) and returns the agent's answer.
    func handshake(version: UInt32 = 1, maxFrameSize: UInt32 = 0) -> ReadResult {
        send(Baton_V1_Frame.with {
            $0.hello = .with {
                $0.protocolVersion = version
                $0.deviceName = "raw"
                $0.maxFrameSize = maxFrameSize
            }
        })
        return read()
    }
}

extension RawConnection.ReadResult {
    /// The Goodbye this is, if it is one.
    var goodbye: Baton_V1_Goodbye? {
        if case .frame(let frame) = self, case .goodbye(let goodbye) = frame.body { return goodbye }
        return nil
    }
}
