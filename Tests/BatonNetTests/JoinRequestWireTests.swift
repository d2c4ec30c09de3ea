@testable import BatonNet
import BatonSecurity
import BatonWire
import Crypto
import Foundation
import Testing
import X509

/// `JoinRequest.public_key` as an agent reads it: DER SubjectPublicKeyInfo, as the protocol
/// says and Baton's client sends, and the bare 65-byte point Baton clients sent before. The
/// caller presents a self-signed certificate naming its id (no account at all), as a client
/// written from baton.proto alone would.
@Suite("Joining over the wire: the key a JoinRequest carries", .timeLimit(.minutes(1)))
struct JoinRequestWireTests {
    /// A device of no account: its id, key, and a self-signed certificate naming the id as
    /// `urn:uuid:`.
    struct Stranger {
        let id = UUID().uuidString.lowercased()
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())

        var certificate: Certificate {
            get throws {
                let name = try DistinguishedName { CommonName("a client of no account") }
                return try Certificate(
                    version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
                    notValidBefore: Date() - 60, notValidAfter: Date() + 3600, issuer: name, subject: name,
                    signatureAlgorithm: .ecdsaWithSHA256,
                    extensions: try Certificate.Extensions {
                        SubjectAlternativeNames([.uniformResourceIdentifier("urn:uuid:" + id)])
                    },
                    issuerPrivateKey: key)
            }
        }
    }

    /// Sends a JoinRequest to `agent` as `stranger` with `secret` and `publicKey` as given; the
    /// answer, or nil with the test failed.
    static func join(_ agent: AgentProcess, as stranger: Stranger, secret: [UInt8], publicKey: [UInt8],
                     sourceLocation: SourceLocation = #_sourceLocation) async throws -> Baton_V1_JoinResponse? {
        let context = try TLSHostileTests.strangerContext(chain: [try stranger.certificate], key: stranger.key)
        let raw = try await onThread { try RawConnection(port: agent.address.port, context: context) }
        let ack = try await onThread { raw.handshake() }
        guard case .frame(let frame) = ack, case .helloAck = frame.body else {
            Issue.record("no HelloAck: \(ack)", sourceLocation: sourceLocation)
            return nil
        }
        raw.send(.with {
            $0.joinRequest = .with {
                $0.requestID = 7
                $0.inviteSecret = Data(secret)
                $0.deviceID = stranger.id
                $0.deviceName = "wire joiner"
                $0.publicKey = Data(publicKey)
            }
        })
        let answer = try await onThread { raw.read() }
        guard case .frame(let answered) = answer, case .joinResponse(let response) = answered.body else {
            Issue.record("no JoinResponse: \(answer)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(response.requestID == 7, sourceLocation: sourceLocation)
        return response
    }

    /// Checks that `response` enrols `stranger`: a device certificate of `holder`'s account, for
    /// its key and naming its id.
    static func expectEnrolled(_ response: Baton_V1_JoinResponse?, _ stranger: Stranger, in holder: TestAccount,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let response = try #require(response, sourceLocation: sourceLocation)
        #expect(response.status == .success, "\(response.detail)", sourceLocation: sourceLocation)
        let certificate = try Certificate(derEncoded: Array(response.deviceCertificate))
        #expect(certificate.publicKey == stranger.key.publicKey, sourceLocation: sourceLocation)
        #expect(try DeviceCertificate.verify(certificate, issuedBy: holder.credentials.accountCertificate) == stranger.id,
                sourceLocation: sourceLocation)
    }

    @Test("a key sent as DER SubjectPublicKeyInfo joins: the certificate returned is for it")
    func subjectPublicKeyInfo() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let code = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code
        let stranger = Stranger()
        let spki = try JoinKey.encode(stranger.key.publicKey)
        #expect(spki == Array(try #require(P256.Signing.PublicKey(stranger.key.publicKey)).derRepresentation))
        try Self.expectEnrolled(try await Self.join(agent, as: stranger, secret: code.secret, publicKey: spki), stranger, in: holder)
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("the bare 65-byte point older Baton clients send still joins")
    func barePoint() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let code = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code
        let stranger = Stranger()
        let point = Array(try #require(P256.Signing.PublicKey(stranger.key.publicKey)).x963Representation)
        #expect(point.count == 65)
        try Self.expectEnrolled(try await Self.join(agent, as: stranger, secret: code.secret, publicKey: point), stranger, in: holder)
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("a key that is not the caller's, or not a key, is refused saying so, and the code is not spent")
    func wrongKey() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let code = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code
        let stranger = Stranger()
        let someoneElses = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        let refused = try await Self.join(agent, as: stranger, secret: code.secret, publicKey: someoneElses)
        #expect(refused?.status == .refused)
        #expect(refused?.detail.contains("not the P-256 key the caller's certificate holds") == true, "\(refused?.detail ?? "")")
        let garbage = try await Self.join(agent, as: stranger, secret: code.secret, publicKey: Array("a key".utf8))
        #expect(garbage?.status == .refused)
        #expect(garbage?.detail.contains("DER SubjectPublicKeyInfo") == true, "\(garbage?.detail ?? "")")
        // The code still works.
        try Self.expectEnrolled(
            try await Self.join(agent, as: stranger, secret: code.secret, publicKey: try JoinKey.encode(stranger.key.publicKey)),
            stranger, in: holder)
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("JoinResponse carries the account's broker as stored when the device is enrolled (broker_url, broker_ca), not the agent's --broker; empty without one, and to a refused caller")
    func brokerFields() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, arguments: ["--broker", "mqtt://127.0.0.1:1"], home: holder.home.path)
        let before = Stranger()
        let first = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code
        let none = try await Self.join(agent, as: before, secret: first.secret, publicKey: try JoinKey.encode(before.key.publicKey))
        try Self.expectEnrolled(none, before, in: holder)
        #expect(none?.brokerURL == "" && none?.brokerCa == "")

        // Stored while the agent runs: the next enrolment carries it.
        let work = try TemporaryDirectory("baton-join-wire")
        let ca = try JoinBrokerTests.ownCA()
        try work.write("ca.pem", ca)
        try await JoinBrokerTests.setBroker("mqtts://Hub.Home", ca: work.file("ca.pem"), for: holder.home.path)
        let after = Stranger()
        let second = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code
        let carried = try await Self.join(agent, as: after, secret: second.secret, publicKey: try JoinKey.encode(after.key.publicKey))
        try Self.expectEnrolled(carried, after, in: holder)
        #expect(carried?.brokerURL == "mqtts://hub.home:8883")
        #expect(carried?.brokerCa == ca)

        let late = Stranger()
        let refused = try await Self.join(agent, as: late, secret: second.secret, publicKey: try JoinKey.encode(late.key.publicKey))
        #expect(refused?.status == .refused && refused?.detail.contains("already been used") == true, "\(refused?.detail ?? "")")
        #expect(refused?.brokerURL == "" && refused?.brokerCa == "")
        #expect(await agent.stop() == 0, "\(agent.log)")
    }
}
