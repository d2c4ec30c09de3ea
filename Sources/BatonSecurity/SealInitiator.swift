import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The dialling side of a sealed handshake (``SealHandshake``): makes the hello, then checks the
/// agent's reply as a TLS client checks the agent it dialled, and derives the session.
public struct SealInitiator: Sendable {
    /// The hello to send.
    public let hello: [UInt8]
    /// The session id the hello carries.
    public let sessionID: [UInt8]
    /// The device dialled, lower case.
    public let peerDeviceID: String
    private let localDeviceID: String
    /// The ephemeral private key, as bytes (swift-crypto's keys are not `Sendable`).
    private let ephemeral: [UInt8]

    /// A hello from `credentials` to device `peerDeviceID` (1 to 64 bytes, as device ids are),
    /// dated `now`, with a fresh session id and ephemeral key.
    public init(credentials: SealCredentials, to peerDeviceID: String, now: Date = Date()) {
        precondition(SealHandshake.isValidDeviceID(peerDeviceID), "a device id of 1 to 64 bytes")
        var generator = SystemRandomNumberGenerator()
        let sessionID = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let made = SealHandshake.make(kind: SealHandshake.helloKind, sessionID: sessionID, from: credentials,
                                      to: peerDeviceID, helloHash: nil, now: now)
        var message = made.message
        hello = message.signed(with: credentials.key)
        self.sessionID = sessionID
        self.peerDeviceID = message.receiver
        localDeviceID = credentials.deviceID
        ephemeral = Array(made.ephemeral.rawRepresentation)
    }

    /// The session, and who the agent proved to be, from its `reply`. The agent is judged as
    /// a TLS client judges the one it dials: what earlier handshakes pinned for the device
    /// (`trustStore.known`) over what its source claimed (`expecting`), then
    /// ``PeerTrust/verifyAgent(chain:deviceID:expecting:now:)`` for the device dialled, then
    /// the pins. Throws ``SealError/malformed(_:)`` for bytes that are no reply,
    /// ``SealError/wrongSession`` for a reply to another hello, ``SealError/wrongReceiver`` for
    /// one to another device, ``SealError/expired`` or ``SealError/notYetValid``,
    /// ``SealError/forged`` for a signature its certificate's key does not verify, and
    /// ``SealError/refused(_:)`` with the reason when trust says no (another device than the
    /// one dialled among them).
    public func finish(reply: [UInt8], trustStore: TrustStore, expecting: AgentExpectation, now: Date = Date()) throws(SealError) -> (SealedSession, PeerIdentity) {
        let message = try SealHandshake.Message.read(reply)
        guard message.kind == SealHandshake.replyKind else { throw .malformed("a hello where a reply was expected") }
        guard message.sessionID == sessionID, message.helloHash == SealHandshake.hash(hello) else { throw .wrongSession }
        guard message.receiver.lowercased() == localDeviceID else { throw .wrongReceiver }
        try message.checkFreshness(now: now)
        _ = try message.checkSignature()
        let agent: PeerIdentity
        do {
            // What the source claimed gives way to what earlier handshakes proved (as TCPLink).
            let known = trustStore.known
            let account = try known.expectation(for: peerDeviceID, claimed: expecting)
            agent = try trustStore.trust.verifyAgent(chain: message.chain, deviceID: peerDeviceID, expecting: account, now: now)
            try known.check(agent)
        } catch {
            throw .refused("\(error)")
        }
        // verifyAgent matched the certificate to the device dialled; the reply must say so too.
        guard message.sender.lowercased() == agent.deviceID else {
            throw .refused("the agent's reply names device \(message.sender.lowercased()), but its certificate names \(agent.deviceID ?? "none")")
        }
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: ephemeral) else { preconditionFailure("own ephemeral key unreadable") }
        let keys = try SealHandshake.keys(key, peerKey: message.ephemeralKey, hello: hello, reply: reply)
        return (SealedSession(id: sessionID, localDeviceID: localDeviceID, peerDeviceID: peerDeviceID, keys: keys, isInitiator: true), agent)
    }
}
