import BatonAgent
import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A hostile MPD: it greets as MPD does, then answers every command with `key: value` lines
/// for ever, never its `OK`. The agent must give up on the answer at its size caps, not grow.
@Suite("An MPD whose answer never ends", .serialized, .timeLimit(.minutes(2)))
struct EndlessMPDTests {
    /// A loopback listener that greets each connection as MPD and, once a command comes,
    /// writes valid pairs as fast as the socket takes them until the peer goes or ``stop()``.
    final class EndlessMPD: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let stopped = NSLock()
        private var isStopped = false
        /// The bytes of pairs written, over all connections.
        private var writtenBytes = 0
        var written: Int { stopped.withLock { writtenBytes } }

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            guard bound == 0, listen(fd, 16) == 0 else { throw AgentFailure("cannot listen: \(String(cString: strerror(errno)))") }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            listener = fd
            port = Int(UInt16(bigEndian: address.sin_port))
            Thread { [self] in accepting() }.start()
        }

        var isRunning: Bool { stopped.withLock { !isStopped } }

        func stop() {
            stopped.withLock { isStopped = true }
            shutdown(listener, Int32(SHUT_RDWR))
        }

        private func accepting() {
            while isRunning {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else {
                    if errno == EINTR { continue }
                    return
                }
                Thread { [self] in serve(fd) }.start()
            }
        }

        private func serve(_ fd: Int32) {
            defer { close(fd) }
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            guard send(fd, "OK MPD 0.23.5\n") else { return }
            // Waits for a command, then never ends its answer.
            var byte: UInt8 = 0
            while recv(fd, &byte, 1, 0) == 1, byte != UInt8(ascii: "\n") {}
            // Long lines (well under the 1 MiB line cap): bytes pile up fast, as in the attack.
            let chunk = String(repeating: "file: music/" + String(repeating: "never-ending-song/", count: 200) + "x.flac\n", count: 20)
            while isRunning, send(fd, chunk) {
                stopped.withLock { writtenBytes += chunk.utf8.count }
            }
        }

        /// Writes all of `text`; false once the peer is gone (or stalls a second, or we stop).
        private func send(_ fd: Int32, _ text: String) -> Bool {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    @Test("playback state from an MPD that streams pairs and never says OK: player_failed naming the cap, memory stays bounded, the agent serves on")
    func endlessAnswer() async throws {
        let mpd = try EndlessMPD()
        defer { mpd.stop() }
        let music = try TemporaryDirectory("baton-music")
        // A deadline long enough that the caps, not the deadline, end each answer, however busy
        // the machine (a debug agent on a loaded runner reads a few MB a second).
        let device = try await PlayerAgent.mpd("Endless Speaker", port: mpd.port, music: music.path, timeout: 20)
        let client = makeClient()
        let before = BackpressureTests.residentBytes(device.agent.pid)
        var peak = before
        for _ in 0..<3 {
            let reply = try await client.send(
                PlaybackCommand.state.message, to: PlaybackCommand.service, app: playerApp, on: device.target, timeout: .seconds(30)
            ).get()
            #expect(reply.status == .success, "\(reply)")
            let failure = try #require(reply.message.flatMap(PlaybackFailure.init(message:)), "\(reply)")
            #expect(failure.code == "player_failed", "\(failure)")
            #expect(failure.description.contains("went past 100000 lines or 8 MiB without its OK"), "\(failure)")
            peak = max(peak, BackpressureTests.residentBytes(device.agent.pid))
        }
        // Unbounded, three calls of up to 20 s each at the attack's 120 MB/s would have grown it by gigabytes.
        #expect(mpd.written > 3 * (8 << 20), "the fake MPD wrote \(mpd.written) bytes")
        #expect(peak - before < 64 << 20, "the agent grew from \(before >> 20) MiB to \(peak >> 20) MiB")
        // Still serving.
        let (info, _) = try await client.describe(device.target, timeout: .seconds(5)).get()
        #expect(info.name == "Endless Speaker")
        mpd.stop()
        await device.stop()
    }
}
