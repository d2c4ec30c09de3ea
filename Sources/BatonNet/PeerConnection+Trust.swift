import BatonSecurity
import NIOSSL

extension PeerConnection {
    /// Agent side, in the TLS handshake: who the caller is (``peerIdentity``), or why it is
    /// refused (``refusal``: an expired or revoked certificate of this account, one that
    /// cannot be read).
    func judgeCaller(_ certificates: [NIOSSLCertificate], trust: PeerTrust) {
        do {
            peerIdentity = try trust.classifyCaller(chain: certificates.map { try $0.toDERBytes() })
        } catch {
            refusal = "\(error)"
        }
    }

    /// Client side, in the TLS handshake: whether the agent is the device and account the
    /// caller expects.
    func judgeAgent(_ certificates: [NIOSSLCertificate], trust: PeerTrust, expecting expectation: PeerExpectation) {
        do {
            peerIdentity = try trust.verifyAgent(
                chain: certificates.map { try $0.toDERBytes() }, deviceID: expectation.deviceID, expecting: expectation.account)
        } catch {
            refusal = "\(error)"
        }
    }
}
