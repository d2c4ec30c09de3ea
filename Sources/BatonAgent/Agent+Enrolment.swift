import BatonCore
import BatonSecurity
import BatonWire
import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Agent {
    /// Answers a device joining with an invite code (`baton account invite` on this device):
    /// redeems the code once (not when the device would be refused anyway), and issues a
    /// certificate of this account for the id and key the caller proved in the TLS handshake
    /// (the request must name the same; its key as DER SubjectPublicKeyInfo, or the bare point
    /// older Baton clients send). Refusals are logged without the code.
    func enrol(_ request: Baton_V1_JoinRequest, caller: PeerIdentity?, from peer: String) -> Baton_V1_JoinResponse {
        var response = Baton_V1_JoinResponse()
        response.requestID = request.requestID
        func refuse(_ status: Baton_V1_JoinStatus, _ why: String) -> Baton_V1_JoinResponse {
            logger.warning("refused a device joining the account", metadata: ["peer": "\(peer)", "reason": "\(why)"])
            response.status = status
            response.detail = why
            return response
        }
        guard let store = trustStore else { return refuse(.notSupported, "this agent runs without an account (--insecure)") }
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
        guard let requested = JoinKey.decode(Array(request.publicKey)) else {
            return refuse(.refused, "the request's public_key is not a P-256 key in DER SubjectPublicKeyInfo")
        }
        guard requested == publicKey else {
            return refuse(.refused, "the request's key is not the P-256 key the caller's certificate holds")
        }
        let name = request.deviceName.isEmpty ? id : request.deviceName
        do {
            // What would refuse the device comes first: a refused device does not spend the code.
            try credentials.checkEnrolment(deviceID: id, name: name, in: store.folder)
            try credentials.redeemInvite(secret: Array(request.inviteSecret), in: store.folder)
            let certificate = try credentials.enrol(deviceID: id, name: name, publicKey: publicKey, in: store.folder)
            response.status = .success
            response.accountCertificate = Data(try credentials.accountCertificate.serializeAsPEM().derBytes)
            response.deviceCertificate = Data(try certificate.serializeAsPEM().derBytes)
            response.revocationList = store.revocationListText ?? ""
            logger.notice("enrolled a device", metadata: ["id": "\(id)", "name": "\(name)", "peer": "\(peer)"])
            return response
        } catch {
            return refuse(.refused, "\(error)")
        }
    }
}
