import Crypto
import X509
import SwiftASN1
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An account's certificate authority: the key that signs the account's device certificates,
/// and its self-signed certificate, which every device of the account trusts.
public struct CertificateAuthority: Sendable {
    /// The CA's self-signed certificate.
    public let certificate: Certificate
    /// The CA's key (P-256); only the devices that can enrol others hold it.
    public let key: Certificate.PrivateKey

    /// How long an account's CA certificate lasts.
    static let lifetime: TimeInterval = 20 * 365 * 86_400
    /// How long a device certificate lasts; revocation covers one that leaks sooner.
    static let deviceLifetime: TimeInterval = 10 * 365 * 86_400
    /// Clocks of devices disagree; certificates start this long before they are made.
    static let backdating: TimeInterval = 3600

    /// The authority whose certificate is `certificate` and whose key is `key`.
    public init(certificate: Certificate, key: Certificate.PrivateKey) {
        self.certificate = certificate
        self.key = key
    }

    /// A new account: a fresh P-256 key and a self-signed CA certificate named after it.
    public static func create(now: Date = Date()) throws -> CertificateAuthority {
        let p256 = P256.Signing.PrivateKey()
        let key = Certificate.PrivateKey(p256)
        let publicKey = key.publicKey
        // A name of its own, so that two accounts never look alike to a chain builder.
        let suffix = Array(SHA256.hash(data: p256.publicKey.derRepresentation)).prefix(4).hexDigits
        let name = try DistinguishedName {
            OrganizationName("Baton")
            CommonName("Baton account \(suffix)")
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now - backdating, notValidAfter: now + lifetime, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: key)
        return CertificateAuthority(certificate: certificate, key: key)
    }

    /// The account's fingerprint.
    public var fingerprint: AccountFingerprint {
        get throws { try AccountFingerprint(of: certificate) }
    }

    /// A certificate for device `id` named `name`, for `publicKey`: usable as a TLS client and
    /// server, carrying the id as the URI `urn:uuid:ID` in its subject alternative names and
    /// as its CommonName. The CommonName is the id, never `name`: a broker that takes the
    /// username from it (mosquitto's `use_identity_as_username`) then keeps each device to its
    /// own topics, and logs no name a person gave. The name lives in the enrolled list.
    public func issueDeviceCertificate(id: String, name: String, publicKey subjectKey: Certificate.PublicKey, now: Date = Date()) throws -> Certificate {
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: subjectKey,
            notValidBefore: now - Self.backdating, notValidAfter: now + Self.deviceLifetime,
            issuer: certificate.subject,
            subject: try DistinguishedName {
                OrganizationName("Baton")
                CommonName(id.lowercased())
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames([.uniformResourceIdentifier(DeviceCertificate.uri(forDevice: id))])
                SubjectKeyIdentifier(hash: subjectKey)
                AuthorityKeyIdentifier(keyIdentifier: try certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: key)
    }
}
