import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Crypto
import NIOCore
import NIOPosix
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Agent {
    /// Answers a join attempt on `connection`: refused at once, before any work, past the
    /// attempts its address and all addresses may make (``JoinLimiter``); else enrolled off
    /// the loop (``enrol(_:store:caller:from:)``). Every refusal goes to the connection's
    /// rate-limited refusal log. On the connection's loop.
    func join(_ request: JoinRequest, on connection: PeerConnection) -> EventLoopFuture<JoinAnswer> {
        let loop = connection.eventLoop
        if let refusal = joinLimiter.admit(connection.remoteIPAddress) {
            connection.noteRefusedJoin(refusal)
            return loop.makeSucceededFuture(JoinAnswer(status: .refused, detail: refusal))
        }
        // Enrolment reads and writes the account's folder under its lock: off the loop.
        let (store, caller, peer) = (trustStore, connection.peerIdentity, connection.remoteDescription)
        return NIOThreadPool.singleton.runIfActive(eventLoop: loop) { [self] in
            enrol(request, store: store, caller: caller, from: peer)
        }.map { answer in
            if answer.status != .success { connection.noteRefusedJoin(answer.detail) }
            return answer
        }
    }

    /// Answers a device joining with an invite code (`baton account invite` on this device):
    /// redeems the code once (not when the device would be refused anyway), and issues a
    /// certificate of this account for the id and key the caller proved in the TLS handshake
    /// (the request must name the same; its key as DER SubjectPublicKeyInfo, or the bare point
    /// older Baton clients send). The answer carries the account's broker as stored in the
    /// folder (`baton account broker`), not this run's `--broker`; a stored broker that cannot
    /// be read refuses the join before the code is spent, as export-device fails on it.
    /// Refusals are not logged here (the caller counts them in the refusal log); their details
    /// never hold the code. Blocks on the account's folder: call it off the event loop.
    func enrol(_ request: JoinRequest, store: TrustStore?, caller: PeerIdentity?, from peer: String) -> JoinAnswer {
        func refuse(_ status: JoinStatus, _ why: String) -> JoinAnswer {
            JoinAnswer(status: status, detail: why)
        }
        guard let store else { return refuse(.notSupported, "this agent runs without an account (--insecure)") }
        let credentials = store.credentials
        guard credentials.authority != nil else {
            return refuse(.notSupported, "this device does not hold the account's key; ask the device that made the account")
        }
        guard let caller, let id = caller.deviceID, let publicKey = caller.publicKey else {
            return refuse(.refused, "the caller's certificate names no device")
        }
        guard caller.authorization == .anonymous else { return refuse(.refused, "this device is already of this account") }
        guard request.deviceID.lowercased() == id.lowercased() else {
            return refuse(.refused, "the request names device \(request.deviceID.prefix(40)), not the caller's \(id)")
        }
        // DER SubjectPublicKeyInfo, or the bare point older Baton clients send (JoinKey).
        guard let requested = JoinKey.decode(request.publicKey) else {
            return refuse(.refused, "the request's public_key is not a P-256 key in DER SubjectPublicKeyInfo")
        }
        guard requested == publicKey else {
            return refuse(.refused, "the request's key is not the P-256 key the caller's certificate holds")
        }
        let name = request.deviceName.isEmpty ? id : request.deviceName
        do {
            // What would refuse the device comes first: a refused device does not spend the code.
            try credentials.checkEnrolment(deviceID: id, name: name, in: store.folder)
            let broker = try store.folder.broker()
            try credentials.redeemInvite(secret: request.inviteSecret, in: store.folder)
            let certificate = try credentials.enrol(deviceID: id, name: name, publicKey: publicKey, in: store.folder)
            logger.notice("enrolled a device", metadata: ["id": "\(id)", "name": "\(name)", "peer": "\(peer)"])
            return JoinAnswer(
                status: .success, accountCertificate: try credentials.accountCertificate.serializeAsPEM().derBytes,
                deviceCertificate: try certificate.serializeAsPEM().derBytes, revocationList: store.revocationListText ?? "",
                brokerURL: broker?.url ?? "", brokerCA: broker?.caPEM ?? "")
        } catch {
            return refuse(.refused, "\(error)")
        }
    }
}
