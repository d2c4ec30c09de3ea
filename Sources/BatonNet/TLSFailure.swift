import NIOSSL

/// Why a TLS connection failed, in words for the person at each end: the error the client's
/// caller gets and the line the agent logs. Keys and certificates never appear in either.
struct TLSFailure {
    let error: PeerConnectionError
    let logLine: String

    /// Nil when `error` is not a TLS failure. `refusal` is why this end refused the peer's
    /// certificate, if it did.
    init?(_ error: any Error, role: PeerConnection.Role, refusal: String?, handshakeOver: Bool) {
        if let refusal {
            self.error = .untrustedPeer(refusal)
            logLine = refusal
            return
        }
        guard error is NIOSSLError || error is BoringSSLError else { return nil }
        // BoringSSL's reason codes are the stable part of its messages.
        let text = "\(error)".uppercased()
        let client = role == .client
        // NIOSSL reports end of file in the TLS handshake as its own "EOF during handshake"
        // (handshakeFailed); uncleanShutdown is a close without close_notify after it.
        let uncleanShutdown = if case .uncleanShutdown? = error as? NIOSSLError { true } else { false }
        if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") || text.contains("PACKET_LENGTH_TOO_LONG")
            || text.contains("RECORD_TOO_LARGE") || text.contains("UNEXPECTED_RECORD") {
            logLine = client ? "the agent does not speak TLS" : "not a TLS client (plaintext, or started with --insecure?)"
            self.error = .refusedByPeer("the agent does not speak TLS (is it running with --insecure? then dial it with --insecure too)")
        } else if text.contains("PEER_DID_NOT_RETURN_A_CERTIFICATE") {
            logLine = "the caller presented no certificate"
            self.error = .refusedByPeer("the agent requires a certificate")
        } else if text.contains("ALERT") && (text.contains("CERTIFICATE") || text.contains("UNKNOWN_CA") || text.contains("HANDSHAKE_FAILURE")) {
            logLine = client ? "the agent refused this device's certificate" : "the caller refused this agent's certificate"
            self.error = .refusedByPeer(
                "the agent refused this device's certificate (revoked, expired, or not valid; its log says which)")
        } else if text.contains("EOF DURING") || (uncleanShutdown && !handshakeOver) {
            logLine = "the peer closed the connection during the TLS handshake"
            self.error = .refusedByPeer("the agent closed the connection during the TLS handshake")
        } else {
            logLine = "TLS failed: \(error)"
            self.error = .refusedByPeer("TLS failed: \(error)")
        }
    }
}
