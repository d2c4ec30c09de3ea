import BatonCore
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decisions a TLS handshake's custom verification makes about the peer's certificate chain
/// (DER, leaf first; a Baton device presents its certificate and its account's CA certificate),
/// against this device's account and revocation list. A snapshot: ``TrustStore`` makes a new one
/// when the revocation list changes.
public struct PeerTrust: Sendable {
    /// This device's credentials: its account's CA is the one trusted.
    public let credentials: DeviceCredentials
    /// The devices of the account no longer trusted.
    public let revocations: RevocationList

    /// Trust as `credentials`' account sees it, less what `revocations` revokes.
    public init(credentials: DeviceCredentials, revocations: RevocationList) {
        self.credentials = credentials
        self.revocations = revocations
    }

    /// The agent's decision about a caller. A device certificate our account issued, valid at
    /// `now` and not revoked, makes the caller `.sameAccount` with its id. Anything else valid is
    /// `.anonymous` (a self-signed certificate, another account's, anyone's): the device id is
    /// the leaf's `urn:uuid:` URI, if it names one (the caller's own claim, backed only by the
    /// key it proved it holds, as it would be under a CA the caller made itself), and the
    /// account is filled in when the chain's second certificate is a CA that signed the first,
    /// nil otherwise. Throws
    /// ``SecurityError/refused(_:)`` for no chain or one that cannot be read, a leaf that
    /// expired or is not valid yet, and a certificate of our account that is revoked or is not
    /// a device's: those callers are not served at all, not even anonymously.
    public func classifyCaller(chain: [[UInt8]], now: Date = Date()) throws -> PeerIdentity {
        let (leaf, issuer) = try Self.read(chain, peer: "the peer")
        try Self.checkValidity(of: leaf, "the peer's certificate", now: now)
        if isIssuedByOurAccount(leaf) { return try ownDevice(leaf, peer: "the peer", now: now) }
        if let issuer, (try? Self.checkIssuer(issuer, of: leaf, peer: "the peer", now: now)) != nil {
            return PeerIdentity(authorization: .anonymous, deviceID: DeviceCertificate.deviceID(of: leaf),
                                account: AccountFingerprint(der: chain[1]), publicKey: leaf.publicKey)
        }
        return PeerIdentity(authorization: .anonymous, deviceID: DeviceCertificate.deviceID(of: leaf), account: nil, publicKey: leaf.publicKey)
    }

    /// The client's check that the agent it dialled is the device it meant: its chain valid at
    /// `now`, of the account `expecting` says (for our own account: issued by our CA and not
    /// revoked; for another: the chain's second certificate is that account's CA and signed the
    /// first), and, if `deviceID` is given, naming that device (any case). Returns who the agent
    /// is (`.sameAccount` when it is of our account); throws ``SecurityError/refused(_:)`` with
    /// a reason meant for the user otherwise.
    public func verifyAgent(chain: [[UInt8]], deviceID expected: String?, expecting: AgentExpectation, now: Date = Date()) throws -> PeerIdentity {
        let (leaf, issuer) = try Self.read(chain, peer: "the agent")
        try Self.checkValidity(of: leaf, "the agent's certificate", now: now)
        let ours = credentials.fingerprint
        let identity: PeerIdentity
        switch expecting {
        case .ownAccount:
            identity = try ownAgent(leaf, issuer: issuer, chain: chain, now: now)
        case .account(let expected) where expected == ours:
            identity = try ownAgent(leaf, issuer: issuer, chain: chain, now: now)
        case .account(let expected):
            identity = try otherDevice(leaf, issuer: issuer, chain: chain, now: now)
            guard identity.account == expected else {
                throw SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(identity.account?.short ?? "none")…), not the expected one (\(expected.short)…)")
            }
        case .anyAccount:
            identity = isIssuedByOurAccount(leaf)
                ? try ownDevice(leaf, peer: "the agent", now: now)
                : try otherDevice(leaf, issuer: issuer, chain: chain, now: now)
        case .invitedBy(let code):
            identity = isIssuedByOurAccount(leaf)
                ? try ownDevice(leaf, peer: "the agent", now: now)
                : try otherDevice(leaf, issuer: issuer, chain: chain, now: now)
            guard let account = identity.account, code.matches(account) else {
                throw SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(identity.account?.short ?? "none")…), not the one the invite code is for (\(code.accountShort)…)")
            }
        }
        if let expected, identity.deviceID != expected.lowercased() {
            throw SecurityError.refused("the agent presented device \(identity.deviceID ?? "(none)"), not the expected \(expected.lowercased())")
        }
        return identity
    }

    // MARK: Pieces

    /// The leaf and (if sent) the certificate after it; the rest of a chain is not looked at.
    private static func read(_ chain: [[UInt8]], peer: String) throws -> (Certificate, Certificate?) {
        guard let first = chain.first else { throw SecurityError.refused("\(peer) presented no certificate") }
        do {
            return (try Certificate(derEncoded: first), try chain.dropFirst().first.map { try Certificate(derEncoded: $0) })
        } catch {
            throw SecurityError.refused("\(peer)'s certificate chain cannot be read")
        }
    }

    private static func checkValidity(of certificate: Certificate, _ what: String, now: Date) throws {
        guard certificate.notValidBefore <= now else {
            throw SecurityError.refused("\(what) is not valid until \(ISO8601.format(certificate.notValidBefore))")
        }
        guard now <= certificate.notValidAfter else {
            throw SecurityError.refused("\(what) expired at \(ISO8601.format(certificate.notValidAfter))")
        }
    }

    /// Whether our account's CA signed `certificate`: the signature decides, not the names.
    private func isIssuedByOurAccount(_ certificate: Certificate) -> Bool {
        let authority = credentials.accountCertificate
        return certificate.issuer == authority.subject && authority.publicKey.isValidSignature(certificate.signature, for: certificate)
    }

    /// A device of our account: a device certificate, not revoked.
    private func ownDevice(_ leaf: Certificate, peer: String, now: Date) throws -> PeerIdentity {
        let id: String
        do {
            id = try DeviceCertificate.verify(leaf, issuedBy: credentials.accountCertificate, now: now)
        } catch SecurityError.refused(let why) {
            throw SecurityError.refused("\(peer)'s certificate is refused: \(why)")
        }
        if revocations.revokes(leaf, id: id) {
            throw SecurityError.refused("\(peer)'s device ID \(id) is revoked by this account")
        }
        return PeerIdentity(authorization: .sameAccount, deviceID: id, account: credentials.fingerprint, publicKey: leaf.publicKey)
    }

    /// The agent as a device of our own account, or a refusal that says whose it is instead.
    private func ownAgent(_ leaf: Certificate, issuer: Certificate?, chain: [[UInt8]], now: Date) throws -> PeerIdentity {
        guard isIssuedByOurAccount(leaf) else {
            let ours = credentials.fingerprint.short
            if let issuer, (try? Self.checkIssuer(issuer, of: leaf, peer: "the agent", now: now)) != nil {
                let theirs = AccountFingerprint(der: chain[1]).short
                throw SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(theirs)…), not this one (\(ours)…)")
            }
            throw SecurityError.refused("the agent's certificate was not issued by this account (\(ours)…), nor by any account it presented")
        }
        return try ownDevice(leaf, peer: "the agent", now: now)
    }

    /// A device of another account, whose CA is the chain's second certificate.
    private func otherDevice(_ leaf: Certificate, issuer: Certificate?, chain: [[UInt8]], now: Date) throws -> PeerIdentity {
        guard let issuer else { throw SecurityError.refused("the agent presented no account certificate with its own") }
        try Self.checkIssuer(issuer, of: leaf, peer: "the agent", now: now)
        let id: String
        do {
            id = try DeviceCertificate.verify(leaf, issuedBy: issuer, now: now)
        } catch SecurityError.refused(let why) {
            throw SecurityError.refused("the agent's certificate is refused: \(why)")
        }
        return PeerIdentity(authorization: .anonymous, deviceID: id, account: AccountFingerprint(der: chain[1]), publicKey: leaf.publicKey)
    }

    /// Checks that `issuer` is a CA, valid at `now`, that signed `leaf`.
    private static func checkIssuer(_ issuer: Certificate, of leaf: Certificate, peer: String, now: Date) throws {
        guard case .isCertificateAuthority = try? issuer.extensions.basicConstraints else {
            throw SecurityError.refused("\(peer)'s second certificate is not an account's certificate authority")
        }
        guard leaf.issuer == issuer.subject, issuer.publicKey.isValidSignature(leaf.signature, for: leaf) else {
            throw SecurityError.refused("\(peer)'s account certificate did not issue its device certificate")
        }
        try checkValidity(of: issuer, "\(peer)'s account certificate", now: now)
    }
}
