@testable import BatonNet
import BatonCore
import BatonWire
import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Testing
import X509

#if canImport(Glibc)
import Glibc
#endif

/// The limits a stranger meets first: connections per address and in all, strangers' own
/// smaller limits, TLS handshakes that never finish; and a log that a flood of refused
/// connections cannot flood.
@Suite("What a stranger meets first", .timeLimit(.minutes(1)))
struct AdmissionTests {
    /// Log lines, kept.
    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
    }

    struct Keeper: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            lines.add("\(event.level) \(event.message) \(fields)")
        }
    }

    static func server(
        security: ConnectionSecurity, admission: AgentServer.Admission = ConnectionLeakTests.roomy, lines: Lines = Lines()
    ) throws -> AgentServer {
        try ConnectionLeakTests.server(
            security: security, made: ConnectionLeakTests.Made(), admission: admission,
            logger: Logger(label: "admission-test", factory: { _ in Keeper(lines: lines) }))
    }

    /// Everything a socket reads until the other end closes it (or 5 s pass), as frames.
    static func framesUntilClosed(_ socket: ConnectionLeakTests.Socket) -> [Frame] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        var inbound = ByteBuffer(bytes: bytes)
        var frames: [Frame] = []
        while let event = try? decoder.decode(buffer: &inbound), case .frame(let frame) = event { frames.append(frame) }
        return frames
    }

    @Test("past the connections one address may hold, a new one hears Goodbye busy at once; one closing makes room")
    func perAddress() async throws {
        var admission = ConnectionLeakTests.roomy
        admission.connectionsPerAddress = 5
        let server = try Self.server(security: .insecure, admission: admission)
        let port = server.localAddress.port!
        try await onThread {
            let held = try (0..<5).map { _ in try ConnectionLeakTests.Socket(port: port) }
            // The server counts a connection when it comes: make sure these five have.
            for s in held {
                s.send(ConnectionLeakTests.frame(.hello(Hello())))
                s.receive()
            }
            let sixth = try ConnectionLeakTests.Socket(port: port)
            let frames = Self.framesUntilClosed(sixth)
            sixth.end()
            guard case .goodbye(.busy, let detail)? = frames.first else {
                Issue.record("no Goodbye busy: \(frames)")
                return
            }
            #expect(detail == "5 connections are open from 127.0.0.1, as many as the agent takes from one address")
            held[0].end()
            usleep(200_000)
            let again = try ConnectionLeakTests.Socket(port: port)
            again.send(ConnectionLeakTests.frame(.hello(Hello())))
            #expect(again.receive() > 0, "no HelloAck once a connection closed")
            again.end()
            for s in held.dropFirst() { s.end() }
        }
        try await server.shutdown().get()
    }

    @Test("past the strangers' limit, a caller of another account hears Goodbye busy after its handshake; the account's own devices are let in")
    func strangers() async throws {
        var admission = ConnectionLeakTests.roomy
        admission.anonymousConnectionsPerAddress = 2
        let server = try Self.server(security: TestAccount.shared.security, admission: admission)
        let port = server.localAddress.port!
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName("a stranger") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: Date() - 60, notValidAfter: Date() + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.notCertificateAuthority) }, issuerPrivateKey: key)
        let stranger = try TLSHostileTests.strangerContext(chain: [certificate], key: key)
        try await onThread {
            let first = try RawConnection(port: port, context: stranger), second = try RawConnection(port: port, context: stranger)
            for raw in [first, second] {
                guard case .frame(let ack) = raw.handshake(), case .helloAck = ack.body else {
                    Issue.record("a stranger within the limit was not let in")
                    return
                }
            }
            let third = try RawConnection(port: port, context: stranger)
            let results = third.readUntilClosed()
            #expect(results.compactMap(\.goodbye).map(\.reason) == [.busy], "\(results)")
            #expect(results.compactMap(\.goodbye).first?.detail == "2 connections of other accounts are open from 127.0.0.1, as many as the agent takes from one address")
            // The account's own device is let in all the same.
            let own = try RawConnection(port: port)
            guard case .frame(let ack) = own.handshake(), case .helloAck = ack.body else {
                Issue.record("the account's own device was not let in")
                return
            }
        }
        try await server.shutdown().get()
    }

    @Test("a TLS handshake that never finishes is closed at the hello timeout, and leaves nothing behind")
    func handshakeNeverFinishes() async throws {
        let made = ConnectionLeakTests.Made()
        let lines = Lines()
        let server = try ConnectionLeakTests.server(
            security: TestAccount.shared.security, made: made, helloTimeout: .milliseconds(200),
            logger: Logger(label: "admission-test", factory: { _ in Keeper(lines: lines) }))
        let port = server.localAddress.port!
        let closedAt = try await onThread { () -> Double in
            // Connected, and not a byte of TLS sent.
            let silent = try ConnectionLeakTests.Socket(port: port)
            let t0 = Date()
            while silent.receive() > 0 {}
            silent.end()
            return Date().timeIntervalSince(t0)
        }
        #expect(closedAt < 5, "the silent caller was not closed by the hello timeout")
        let alive = try await ConnectionLeakTests.settle(server, made)
        #expect(alive == (0, 0, 0))
        #expect(lines.all.contains { $0.contains("no TLS handshake within") }, "\(lines.all)")
        try await server.shutdown().get()
    }

    @Test("a thousand refused handshakes make a handful of log lines: the first five of each 10 s in full, then one summary with the count")
    func boundedLog() async throws {
        let lines = Lines()
        let server = try Self.server(security: TestAccount.shared.security, lines: lines)
        let port = server.localAddress.port!
        let t0 = Date()
        try await onThread {
            for _ in 0..<1_000 {
                let s = try ConnectionLeakTests.Socket(port: port)
                s.send(Array("GET / HTTP/1.0\r\n\r\n".utf8))
                while s.receive() > 0 {}
                s.end()
            }
        }
        try await server.shutdown().get()
        // Every refusal is told, in full or counted in a summary; at most 6 lines each 10 s
        // (however slow a loaded machine makes the thousand connections).
        let intervals = Int(Date().timeIntervalSince(t0) / 10) + 1
        let told = lines.all.filter { $0.contains("refused") || $0.contains("and since") }
        let full = told.filter { $0.contains("refused a caller") && $0.contains("not a TLS client") }
        let summarized = told.compactMap { line -> Int? in
            guard let range = line.range(of: #"and since: [0-9]+ refused callers"#, options: .regularExpression) else { return nil }
            return Int(line[range].split(separator: " ")[2])
        }
        #expect(full.count + summarized.reduce(0, +) == 1_000, "\(told.prefix(12))")
        #expect(told.count <= 6 * intervals, "\(told.count) lines in \(intervals) intervals")
        #expect(full.count >= 5 && !summarized.isEmpty, "\(told.prefix(12))")
    }
}
