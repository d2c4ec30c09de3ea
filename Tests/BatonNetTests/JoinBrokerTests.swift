import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing
import X509

/// The account's broker (`baton account broker`) reaches a device that joins with an invite
/// code, as it reaches one that imports a device file: `baton account join` stores it, the
/// joined device's commands and agent use it, and a broker it cannot use leaves the join whole.
@Suite("Joining with an invite code brings the account's broker", .timeLimit(.minutes(3)))
struct JoinBrokerTests {
    /// `baton account broker --json` for the XDG_CONFIG_HOME `home`.
    static func broker(_ home: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSON? {
        let result = try await runBaton(["account", "broker", "--json"], xdg: home)
        #expect(result.code == 0, "\(result)", sourceLocation: sourceLocation)
        return result.json(sourceLocation: sourceLocation)
    }

    /// `baton account broker URL` for the XDG_CONFIG_HOME `home`, with `--ca FILE` if given.
    static func setBroker(_ url: String, ca: String? = nil, for home: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await runBaton(["account", "broker", url] + (ca.map { ["--ca", $0] } ?? []), xdg: home)
        #expect(result.code == 0, "\(result)", sourceLocation: sourceLocation)
    }

    /// The PEM of a CA certificate of no account: a broker's own CA.
    static func ownCA() throws -> String {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName("a broker's own CA \(UUID().uuidString.prefix(8))") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: Date() - 3600, notValidAfter: Date() + 86_400, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0)) },
            issuerPrivateKey: key)
        return try certificate.serializeAsPEM().pemString + "\n"
    }

    @Test("a device that joins gets the account's broker and its CA, shown by baton account broker and used by its agent; a refused join leaves a device's broker as it was")
    func joinedDeviceGetsTheBroker() async throws {
        let holder = try TestAccount()
        let work = try TemporaryDirectory("baton-join-broker")
        let ca = try Self.ownCA()
        try work.write("broker-ca.pem", ca)
        // Port 1: nothing listens there, so the joined device's agent tries it and no more.
        try await Self.setBroker("mqtts://127.0.0.1:1", ca: work.file("broker-ca.pem"), for: holder.home.path)
        // The holder's agent itself uses no broker: the answer carries the account's, not its own run's.
        let agent = try await AgentProcess.start(config: Fixtures.config, arguments: ["--no-broker"], home: holder.home.path)
        let (code, _) = try await EnrolmentCLITests.invite(holder)

        let laptop = try TemporaryDirectory("baton-joining")
        let joined = try await EnrolmentCLITests.join(code, at: agent, from: laptop, name: "laptop")
        #expect(joined.code == 0, "\(joined)")
        #expect(joined.json()?["broker"] == .string("mqtts://127.0.0.1:1"), "\(joined)")
        #expect(!joined.stderr.contains("broker"), "\(joined)")

        let stored = try await Self.broker(laptop.path)
        #expect(stored?["account"]?["url"] == .string("mqtts://127.0.0.1:1"), "\(String(describing: stored))")
        #expect(stored?["account"]?["ca"] == .string(ca), "\(String(describing: stored))")
        #expect(stored?["origin"] == .string("account"), "\(String(describing: stored))")
        let shown = try await runBaton(["account", "broker"], xdg: laptop.path)
        #expect(shown.stdout.contains("broker: mqtts://127.0.0.1:1 (from the account)"), "\(shown)")
        #expect(shown.stdout.contains("the broker's own CA"), "\(shown)")

        // The joined device's agent, given no broker option, goes to the account's.
        let laptopAgent = try await AgentProcess.start(config: Fixtures.config, arguments: ["--verbose"], home: laptop.path)
        let used = await eventually { laptopAgent.log.contains("broker: mqtts://127.0.0.1:1 (from the account)") }
        #expect(used, "\(laptopAgent.log)")
        #expect(await laptopAgent.stop() == 0, "\(laptopAgent.log)")

        // The spent code again, from a device with a broker of its own: refused, and nothing changed.
        let phone = try TemporaryDirectory("baton-joining")
        try await Self.setBroker("mqtt://127.0.0.1:2", for: phone.path)
        let refused = try await EnrolmentCLITests.join(code, at: agent, from: phone, name: "phone")
        #expect(refused.code == 1 && refused.stderr.contains("already been used"), "\(refused)")
        let kept = try await Self.broker(phone.path)
        #expect(kept?["account"]?["url"] == .string("mqtt://127.0.0.1:2"), "\(String(describing: kept))")
        #expect(kept?["account"]?["ca"] == .string("account"), "\(String(describing: kept))")
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("a device that joins an account without a broker has none afterwards, not even its previous account's")
    func accountWithoutBroker() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let (code, _) = try await EnrolmentCLITests.invite(holder)
        let laptop = try TemporaryDirectory("baton-joining")
        try await Self.setBroker("mqtt://127.0.0.1:2", for: laptop.path)

        let joined = try await EnrolmentCLITests.join(code, at: agent, from: laptop, name: "laptop")
        #expect(joined.code == 0, "\(joined)")
        #expect(joined.json()?["broker"] == .null, "\(joined)")
        #expect(!joined.stderr.contains("broker"), "\(joined)")
        let stored = try await Self.broker(laptop.path)
        #expect(stored?["account"] == .null, "\(String(describing: stored))")
        #expect(stored?["origin"] == .string("none"), "\(String(describing: stored))")
        let shown = try await runBaton(["account", "broker"], xdg: laptop.path)
        #expect(shown.stdout.contains("broker: none"), "\(shown)")
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("an enrolling agent whose stored broker is damaged refuses the join saying so, and the code is not spent")
    func damagedStoredBroker() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        try holder.folder.write("{\"url\": 7}\n", to: "broker.json", mode: 0o600)
        let (code, _) = try await EnrolmentCLITests.invite(holder)
        let laptop = try TemporaryDirectory("baton-joining")
        let refused = try await EnrolmentCLITests.join(code, at: agent, from: laptop, name: "laptop")
        #expect(refused.code == 1, "\(refused)")
        #expect(refused.stderr.contains("broker.json is not a broker's settings"), "\(refused)")
        let (before, _) = try await EnrolmentCLITests.show(laptop.path)
        #expect(before?["fingerprint"] != .string(holder.fingerprint))

        let cleared = try await runBaton(["account", "broker", "--clear"], xdg: holder.home.path)
        #expect(cleared.code == 0, "\(cleared)")
        let joined = try await EnrolmentCLITests.join(code, at: agent, from: laptop, name: "laptop")
        #expect(joined.code == 0, "\(joined)")
        #expect(joined.json()?["broker"] == .null, "\(joined)")
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    /// A broker an enrolling agent sends that this Baton cannot use.
    struct UnusableBroker: Sendable, CustomTestStringConvertible {
        let url: String
        let ca: String
        /// What the one line on stderr says of it.
        let why: String
        var testDescription: String { "\(url) \(ca.isEmpty ? "" : "with CA \"\(ca)\"")" }
    }

    @Test("a broker the joining device cannot use (another scheme, a CA that is not PEM) is not stored: the join stands, and stderr says why in one line", arguments: [
        UnusableBroker(url: "ws://127.0.0.1:8080/mqtt", ca: "", why: "is not a broker URL"),
        UnusableBroker(url: "mqtts://127.0.0.1:8883", ca: "not a certificate", why: "holds no PEM certificate"),
    ])
    func unusableBroker(_ broker: UnusableBroker) async throws {
        let holder = try TestAccount()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let server = try await loop.flatSubmit {
            AgentServer.bind(
                host: "127.0.0.1", port: 0, on: loop, security: holder.security,
                logger: Logger(label: "join-broker-test", factory: { _ in SwiftLogNoOpLogHandler() })
            ) { _ in ForeignBrokerEnroller(holder: holder, brokerURL: broker.url, brokerCA: broker.ca) }
        }.get()
        let (code, _) = try await EnrolmentCLITests.invite(holder)
        let laptop = try TemporaryDirectory("baton-joining")
        try await Self.setBroker("mqtt://127.0.0.1:2", for: laptop.path)

        let port = try #require(server.localAddress.port)
        let joined = try await runBaton(
            ["account", "join", code, "--from", "127.0.0.1:\(port)", "--name", "laptop", "--json"], xdg: laptop.path)
        try await server.shutdown().get()
        try await group.shutdownGracefully()

        #expect(joined.code == 0, "\(joined)")
        #expect(joined.json()?["account"] == .string(holder.fingerprint), "\(joined)")
        #expect(joined.json()?["broker"] == .null, "\(joined)")
        let lines = joined.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(joined)")
        #expect(lines.first?.contains("broker") == true && lines.first?.contains(broker.why) == true, "\(joined)")
        let (account, shown) = try await EnrolmentCLITests.show(laptop.path)
        #expect(account?["fingerprint"] == .string(holder.fingerprint), "\(shown)")
        // Neither the broker sent nor the previous account's.
        let stored = try await Self.broker(laptop.path)
        #expect(stored?["account"] == .null, "\(String(describing: stored))")
    }
}

/// An enrolling agent of a later Baton, or a damaged one: it enrols the caller as the holder's
/// agent would (a real certificate of the holder's account), and sends the broker it is given
/// as it is.
final class ForeignBrokerEnroller: PeerConnectionDelegate, @unchecked Sendable {
    let holder: TestAccount
    let brokerURL: String
    let brokerCA: String

    init(holder: TestAccount, brokerURL: String, brokerCA: String) {
        self.holder = holder
        self.brokerURL = brokerURL
        self.brokerCA = brokerCA
    }

    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? {
        DeviceInfo(id: holder.credentials.deviceID, name: "enroller", kind: .tv, platform: .linux)
    }

    func connection(_ connection: PeerConnection, join request: JoinRequest, context: RequestContext) -> EventLoopFuture<JoinAnswer> {
        let answer: JoinAnswer
        do {
            guard let id = connection.peerIdentity?.deviceID, let key = connection.peerIdentity?.publicKey else {
                throw AgentFailure("the caller's certificate names no device")
            }
            let credentials = holder.credentials
            let certificate = try credentials.enrol(deviceID: id, name: request.deviceName, publicKey: key, in: holder.folder)
            answer = JoinAnswer(
                status: .success, accountCertificate: try credentials.accountCertificate.serializeAsPEM().derBytes,
                deviceCertificate: try certificate.serializeAsPEM().derBytes, brokerURL: brokerURL, brokerCA: brokerCA)
        } catch {
            answer = JoinAnswer(status: .refused, detail: "\(error)")
        }
        return connection.eventLoop.makeSucceededFuture(answer)
    }
}
