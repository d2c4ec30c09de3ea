import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reading and checking device certificates: which device one names, and whether it belongs to
/// an account.
public enum DeviceCertificate {
    /// The subject alternative name URI that names device `id`.
    public static func uri(forDevice id: String) -> String { "urn:uuid:" + id.lowercased() }

    /// The device id `certificate` names, or nil if it names none.
    public static func deviceID(of certificate: Certificate) -> String? {
        guard let names = try? certificate.extensions.subjectAlternativeNames else { return nil }
        for name in names {
            if case .uniformResourceIdentifier(let uri) = name, uri.hasPrefix("urn:uuid:") {
                return String(uri.dropFirst("urn:uuid:".count)).lowercased()
            }
        }
        return nil
    }

    /// Checks that `certificate` is a device certificate issued by `authority` (signature,
    /// issuer, validity at `now`, not a CA), and returns the device id it names.
    public static func verify(_ certificate: Certificate, issuedBy authority: Certificate, now: Date = Date()) throws -> String {
        guard certificate.issuer == authority.subject,
              authority.publicKey.isValidSignature(certificate.signature, for: certificate) else {
            throw SecurityError.refused("the certificate was not issued by this account")
        }
        guard certificate.notValidBefore <= now else { throw SecurityError.refused("the certificate is not valid yet") }
        guard now <= certificate.notValidAfter else { throw SecurityError.refused("the certificate has expired") }
        if case .isCertificateAuthority = try? certificate.extensions.basicConstraints {
            throw SecurityError.refused("the certificate is a certificate authority, not a device")
        }
        guard let id = deviceID(of: certificate) else { throw SecurityError.refused("the certificate names no device") }
        return id
    }
}
