@testable import BatonNet
import BatonClient
import BatonCore
import BatonSecurity
import BatonWire
import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing
import X509

/// Strangers at the TLS door: callers that do not speak TLS, stop halfway through the handshake,
/// present no certificate or one nobody issued, or pass on a forged revocation list. Each gets
/// what it deserves, the agent logs why, and a well-behaved client is served afterwards.
@Suite("Hostile TLS clients", .timeLimit(.minutes(1)))
struct TLSHostileTests {
    // MARK: helpers

    /// A client of `account` launches on `agent` with success.
    static func stillServes(_ agent: AgentProcess, account: TestAccount = .shared, sourceLocation: SourceLocation = #_sourceLocation) async {
        let client = makeClient(account: account)
        defer { client.shutdown() }
        let (launched, detail) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
        #expect(launched == .success, "a well-behaved client was not served: \(detail); agent log:\n\(agent.log)", sourceLocation: sourceLocation)
        #expect(agent.isRunning, sourceLocation: sourceLocation)
    }

    /// Whether one line of the agent's log soon holds every one of `parts`.
    static func logs(_ agent: AgentProcess, _ parts: String...) async -> Bool {
        await eventually(within: 5) {
            agent.log.split(separator: "\n").contains { line in parts.allSatisfy { line.contains($0) } }
        }
    }

    /// Whether none of `results` is a frame: the caller learnt nothing of the protocol.
    static func noFrame(_ results: [RawConnection.ReadResult]) -> Bool {
        !results.contains { if case .frame = $0 { true } else { false } }
    }

    /// What a caller over `context` hears after saying Hello: nothing at all (no results) when
    /// the TLS handshake itself failed on its side.
    static func helloOutcome(port: Int, context: NIOSSLContext) async throws -> [RawConnection.ReadResult] {
        try await onThread {
            guard let raw = try? RawConnection(port: port, readTimeout: 5, context: context) else { return [] }
            return [raw.handshake()] + raw.readUntilClosed()
        }
    }

    /// A TLS 1.3 client context that accepts any agent, presenting `chain` and `key` if given.
    static func strangerContext(chain: [Certificate] = [], key: Certificate.PrivateKey? = nil) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        configuration.certificateVerification = .none
        configuration.certificateChain = try chain.map {
            .certificate(try NIOSSLCertificate(bytes: Array(try $0.serializeAsPEM().pemString.utf8), format: .pem))
        }
        if let key {
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(try key.serializeAsPEM().pemString.utf8), format: .pem))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    // MARK: callers that do not speak TLS

    @Test("a plaintext client saying Hello is refused and learns nothing; the agent logs that it is not a TLS client")
    func plaintextHello() async throws {
        try await withAgent { agent in
            let raw = try await onThread { try RawConnection(port: agent.address.port, tls: false) }
            let results = try await onThread { [raw.handshake()] + raw.readUntilClosed() }
            #expect(Self.noFrame(results), "\(results)")
            #expect(results.last == .closed, "\(results)")
            #expect(await Self.logs(agent, "refused a caller", "not a TLS client"), "\(agent.log)")
            await Self.stillServes(agent)
        }
    }

    struct PlaintextCase: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        /// What the agent's "refused a caller" line gives as the reason.
        var logged: String
        var testDescription: String { name }
    }

    /// Bytes from a fixed seed (SplitMix64), so a failure can be replayed.
    static func garbage(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
    }

    static let plaintextCases: [PlaintextCase] = [
        PlaintextCase(
            name: "an HTTP request",
            bytes: Array("GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: tls-hostile-test/1.0\r\n\r\n".utf8),
            logged: "not a TLS client"),
        PlaintextCase(name: "random garbage", bytes: garbage(count: 512, seed: 0xba70_0005), logged: "not a TLS client"),
        // Nothing at all: the agent's TLS layer reads end of file while waiting for a ClientHello.
        PlaintextCase(name: "a TCP connection closed at once", bytes: [], logged: "the peer closed the connection during the TLS handshake"),
    ]

    @Test("plaintext bytes are refused at the TLS layer; the agent logs why", arguments: plaintextCases)
    func plaintextBytes(_ c: PlaintextCase) async throws {
        try await withAgent { agent in
            let raw = try await onThread { try RawConnection(port: agent.address.port, tls: false) }
            let results = try await onThread {
                if c.bytes.isEmpty {
                    raw.shutdownWrite()
                } else {
                    raw.send(c.bytes)
                }
                return raw.readUntilClosed()
            }
            #expect(Self.noFrame(results), "\(results)")
            #expect(results.last == .closed, "the agent did not close the connection: \(results)")
            #expect(await Self.logs(agent, "refused a caller", c.logged), "\(agent.log)")
            await Self.stillServes(agent)
        }
    }

    @Test("a ClientHello, then the caller goes: the agent logs that it left during the handshake")
    func clientHelloThenClose() async throws {
        try await withAgent { agent in
            guard case .tls(let identity) = TestAccount.shared.security else { throw AgentFailure("the test account has no TLS identity") }
            let gone = clientGroup.next().makePromise(of: Void.self)
            let channel = try await ClientBootstrap(group: clientGroup.next())
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // Nearest the socket, so it sees the ClientHello as TLS wrote it.
                        try channel.pipeline.syncOperations.addHandler(HalfCloseAfterFirstWrite(written: gone))
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(
                            context: identity.clientContext, serverHostname: nil,
                            customVerificationCallback: { _, promise in promise.succeed(.certificateVerified) }))
                    }
                }
                .connect(host: "127.0.0.1", port: agent.address.port).get()
            defer { channel.close(promise: nil) }
            // The ClientHello is out and our side is closed for writing: the agent reads end
            // of file halfway through its handshake. (Half-closed, not closed, so the agent's
            // ServerHello lands in a socket that reads it rather than one that resets.)
            #expect(await result(of: gone.futureResult, within: 5) != nil, "the ClientHello was never written")
            #expect(await result(of: channel.closeFuture, within: 10) != nil, "the agent did not close the connection")
            #expect(await Self.logs(agent, "refused a caller", "the peer closed the connection during the TLS handshake"), "\(agent.log)")
            await Self.stillServes(agent)
        }
    }

    // MARK: TLS callers with the wrong papers

    @Test("a TLS client with no certificate is refused; the agent logs that it presented none")
    func noCertificate() async throws {
        try await withAgent { agent in
            let results = try await Self.helloOutcome(port: agent.address.port, context: try Self.strangerContext())
            // TLS 1.3: the client's side of the handshake may finish before the agent refuses.
            #expect(Self.noFrame(results), "\(results)")
            #expect(await Self.logs(agent, "refused a caller", "the caller presented no certificate"), "\(agent.log)")
            await Self.stillServes(agent)
        }
    }

    @Test("a self-signed certificate of no device is served as anonymous: only anonymous apps, a refused launch logged")
    func selfSignedStranger() async throws {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName("nobody in particular") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: now - 60, notValidAfter: now + 3600, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.notCertificateAuthority) },
            issuerPrivateKey: key)
        let context = try Self.strangerContext(chain: [certificate], key: key)
        try await withAgent { agent in
            // PeerTrust.classifyCaller: valid, not our account's, no CA after it: anonymous.
            let raw = try await onThread { try RawConnection(port: agent.address.port, context: context) }
            let ack = try await onThread { raw.handshake() }
            guard case .frame(let frame) = ack, case .helloAck(let helloAck) = frame.body else {
                Issue.record("no HelloAck: \(ack)")
                return
            }
            // An anonymous caller is told nothing of the account's revocations.
            #expect(helloAck.revocationList.isEmpty)
            raw.send(.with { $0.launchRequest = .with { $0.requestID = 1; $0.uri = "media:x" } })
            let answer = try await onThread { raw.read() }
            guard case .frame(let answerFrame) = answer, case .launchResponse(let response) = answerFrame.body else {
                Issue.record("no LaunchResponse: \(answer)")
                return
            }
            #expect(response.status == .deniedByRemoteSystem, "\(response)")
            raw.send(.with { $0.describeRequest = .with { $0.requestID = 2 } })
            let described = try await onThread { raw.read() }
            if case .frame(let f) = described, case .describeResponse(let d) = f.body {
                #expect(d.apps.map(\.id) == [Fixtures.services], "an anonymous caller sees only anonymous apps")
            } else {
                Issue.record("no DescribeResponse: \(described)")
            }
            #expect(await Self.logs(agent, "refused an anonymous launch", "media:x"), "\(agent.log)")
            await Self.stillServes(agent)
        }
    }

    @Test("a Hello carrying a tampered revocation list gets Goodbye protocol_error; the real list is still taken")
    func tamperedRevocationList() async throws {
        // An account of its own: revoking a device must not touch the shared one.
        let other = try TestAccount()
        guard case .tls(let identity) = other.security else { throw AgentFailure("the account has no TLS identity") }
        try await withAgent(account: other) { agent in
            let doomed = try TemporaryDirectory("baton-doomed")
            try other.enrol(xdg: doomed.path, name: "doomed")
            let (device, _) = try other.credentials.revoke("doomed", in: other.folder)
            let signed = try #require(try other.folder.read("revocations.json"))
            let outer = try JSON.parse(signed)
            let list = try #require(outer["list"]?.stringValue)
            let signature = try #require(outer["signature"]?.stringValue)
            // One character of the signed text changed: another device revoked in its place.
            let first = device.id.first == "a" ? "b" : "a"
            let forged = list.replacingOccurrences(of: device.id, with: first + device.id.dropFirst())
            #expect(forged != list)
            let tampered = JSON.object([.init("list", .string(forged)), .init("signature", .string(signature))]).serialized() + "\n"

            let raw = try await onThread { try RawConnection(port: agent.address.port, identity: identity) }
            let results = try await onThread { [raw.handshake(revocationList: tampered)] + raw.readUntilClosed() }
            let goodbyes = results.compactMap(\.goodbye)
            #expect(goodbyes.map(\.reason) == [.protocolError], "\(results)")
            #expect(goodbyes.first?.detail.contains("revocation list") == true, "\(goodbyes)")
            #expect(results.last == .closed, "\(results)")
            #expect(await Self.logs(agent, "refused a caller's revocation list"), "\(agent.log)")
            await Self.stillServes(agent, account: other)

            // The list as signed is taken, so the forgery was refused for what it was.
            let honest = try await onThread { try RawConnection(port: agent.address.port, identity: identity) }
            let ack = try await onThread { honest.handshake(revocationList: signed) }
            guard case .frame(let frame) = ack, case .helloAck(let helloAck) = frame.body else {
                Issue.record("no HelloAck for the list as signed: \(ack)")
                return
            }
            #expect(helloAck.revocationList == signed)
            #expect(await Self.logs(agent, "adopted a newer revocation list"), "\(agent.log)")
        }
    }

    @Test("an agent whose HelloAck carries a tampered revocation list: the client logs it, keeps its own list, and stays connected")
    func tamperedRevocationListInHelloAck() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "phone")
        let hostile = try account.device(named: "hostile tv")
        // The account's signed list revokes an old TV; the forgery revokes the phone under the
        // same signature.
        let oldTV = try TemporaryDirectory("baton-old-tv")
        let oldTVID = try account.enrol(xdg: oldTV.path, name: "old tv")
        _ = try account.credentials.revoke("old tv", in: account.folder)
        let outer = try JSON.parse(try #require(try account.folder.read("revocations.json")))
        let list = try #require(outer["list"]?.stringValue)
        let signature = try #require(outer["signature"])
        let forged = list.replacingOccurrences(of: oldTVID, with: phone.id)
        #expect(forged != list)
        let tampered = JSON.object([.init("list", .string(forged)), .init("signature", signature)]).serialized()

        // A device of the account (so the phone's TLS check passes) answering Hello with it.
        guard case .tls(let identity) = hostile.security else { throw AgentFailure("no TLS identity") }
        let ack = RawConnection.encode(Baton_V1_Frame.with {
            $0.helloAck = .with {
                $0.protocolVersion = 1
                $0.device = .with {
                    $0.id = hostile.id
                    $0.name = "hostile tv"
                }
                $0.revocationList = tampered
            }
        })
        let server = try await ServerBootstrap(group: clientGroup)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(
                        context: identity.serverContext, customVerificationCallback: { _, promise in promise.succeed(.certificateVerified) }))
                    try channel.pipeline.syncOperations.addHandler(AnswerOnce(ack))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { _ = server.close() }

        let logs = CapturedLog()
        let connection = try await PeerConnector.connect(
            host: "127.0.0.1", port: try #require(server.localAddress?.port), on: clientGroup.next(), security: phone.security,
            expecting: PeerExpectation(deviceID: hostile.id), hello: Hello(),
            // A deadline, not a measure: a loaded machine (every suite at once) can take
            // seconds over a TLS handshake and Hello.
            connectTimeout: .seconds(20), logger: Logger(label: "phone") { _ in logs }).get()
        #expect(try await connection.eventLoop.submit { connection.isOpen }.get(), "the connection did not stand")
        let refused = logs.lines.filter { $0.contains("refused the agent's revocation list") }
        #expect(refused.count == 1, "\(logs.lines)")
        #expect(refused.first?.contains("signature does not check out") == true, "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: phone.folder.file("revocations.json")), "the phone kept the forged list")
        try await connection.eventLoop.submit { connection.goodbye(.unknown, "done") }.get()
    }

    // MARK: the command line at the wrong door

    @Test("baton launch --insecure against a TLS agent exits 77 (denied by this side) saying the agent speaks TLS")
    func insecureClientTLSAgent() async throws {
        try await withAgent { agent in
            let result = try await runBaton(["launch", "--insecure", agent.address.description, "media:x"])
            #expect(result.code == 77, "\(result)")
            #expect((result.stdout + result.stderr).contains("speaks TLS"), "\(result)")
            await Self.stillServes(agent)
        }
    }

    @Test("baton agent --insecure on a non-loopback address is a usage error")
    func insecureAgentNeedsLoopback() async throws {
        let result = try await runBaton(["agent", "--insecure", "--listen", "0.0.0.0:0"])
        #expect(result.code == 2, "\(result)")
        #expect(result.stderr.contains("loopback"), "\(result)")
    }

    @Test("a TLS client against an --insecure agent exits 77 (denied by this side) saying the agent does not speak TLS")
    func tlsClientInsecureAgent() async throws {
        try await withAgent(arguments: ["--insecure"]) { agent in
            let result = try await runBaton(["launch", agent.address.description, "media:x"])
            #expect(result.code == 77, "\(result)")
            #expect((result.stdout + result.stderr).contains("does not speak TLS"), "\(result)")
            // A plaintext client is served still.
            var options = BatonClient.Options()
            options.security = .insecure
            let client = BatonClient(eventLoop: clientGroup.next(), options: options)
            defer { client.shutdown() }
            let (launched, detail) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
            #expect(launched == .success, "\(detail)")
        }
    }
}

/// Lets the first write through (a ClientHello, when TLS sits above it), then closes the
/// channel's output once it is written. Later writes are dropped, and reported written, so the
/// TLS client waits for the agent rather than closing the socket under it (which could make
/// the agent read a reset instead of end of file).
private final class HalfCloseAfterFirstWrite: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private let written: EventLoopPromise<Void>
    private var first = true

    init(written: EventLoopPromise<Void>) { self.written = written }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard first else {
            promise?.succeed()
            return
        }
        first = false
        let out = promise ?? context.eventLoop.makePromise()
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let written = written
        out.futureResult.whenComplete { _ in
            bound.value.close(mode: .output, promise: nil)
            written.succeed()
        }
        context.write(data, promise: out)
    }
}

/// A hostile agent's whole protocol: at the first bytes in (a Hello), writes `answer`, once;
/// everything after is read and ignored.
private final class AnswerOnce: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let answer: [UInt8]
    private var answered = false

    init(_ answer: [UInt8]) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        answered = true
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: answer)), promise: nil)
    }
}

/// A log handler that keeps each line (message and metadata) for the test to read.
private struct CapturedLog: LogHandler {
    private let box = NIOLockedValueBox<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var lines: [String] { box.withLockedValue { $0 } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        box.withLockedValue { $0.append(([event.message.description] + fields).joined(separator: " ")) }
    }
}
