#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The agent's side of a sealed handshake (``SealHandshake``).
public enum SealResponder {
    /// The reply to `hello`, the session, and who the caller proved to be, judged as the agent
    /// judges a TLS caller (``PeerTrust/classifyCaller(chain:now:)``: a device of our account
    /// is `.sameAccount`, anyone else's `.anonymous`, a revoked one of ours refused). Throws
    /// ``SealError/malformed(_:)`` for bytes that are no hello, ``SealError/wrongReceiver`` for
    /// a hello to another device, ``SealError/expired`` or ``SealError/notYetValid``,
    /// ``SealError/forged`` for a signature its certificate's key does not verify, and
    /// ``SealError/refused(_:)`` with the reason when trust says no or the certificate names
    /// another device than the hello's sender.
    public static func respond(to hello: [UInt8], credentials: SealCredentials, trust: PeerTrust, now: Date = Date()) throws(SealError) -> (reply: [UInt8], session: SealedSession, peer: PeerIdentity) {
        let message = try SealHandshake.Message.read(hello)
        guard message.kind == SealHandshake.helloKind else { throw .malformed("a reply where a hello was expected") }
        guard message.receiver.lowercased() == credentials.deviceID else { throw .wrongReceiver }
        try message.checkFreshness(now: now)
        _ = try message.checkSignature()
        let caller: PeerIdentity
        do {
            caller = try trust.classifyCaller(chain: message.chain, now: now)
        } catch {
            throw .refused("\(error)")
        }
        let sender = message.sender.lowercased()
        // A certificate that names a device vouches for that one only (for an anonymous caller,
        // as far as its own key does).
        if let named = caller.deviceID, named != sender {
            throw .refused("the caller's hello names device \(sender), but its certificate names \(named)")
        }
        let made = SealHandshake.make(kind: SealHandshake.replyKind, sessionID: message.sessionID, from: credentials,
                                      to: sender, helloHash: SealHandshake.hash(hello), now: now)
        var answer = made.message
        let reply = answer.signed(with: credentials.key)
        let keys = try SealHandshake.keys(made.ephemeral, peerKey: message.ephemeralKey, hello: hello, reply: reply)
        let session = SealedSession(id: message.sessionID, localDeviceID: credentials.deviceID, peerDeviceID: sender, keys: keys, isInitiator: false)
        return (reply, session, caller)
    }

    /// Who `hello` claims to come from, whom it is for, and its session id, read without
    /// checking anything (for routing and logs); nil when it is no hello.
    public static func peek(_ hello: [UInt8]) -> (sender: String, receiver: String, sessionID: [UInt8])? {
        guard let message = try? SealHandshake.Message.read(hello), message.kind == SealHandshake.helloKind else { return nil }
        return (message.sender.lowercased(), message.receiver.lowercased(), message.sessionID)
    }
}
