import Crypto
import X509
import SwiftASN1
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension CertificateAuthority {
    /// A TLS server certificate for a broker reached as `host`, for `publicKey`: its
    /// CommonName `host`, and `host` as a DNS name in its subject alternative names, or as an
    /// IP address when it is one (IPv4, or IPv6 with or without brackets). Devices of the
    /// account trust it as they trust each other: through the account's CA.
    public func issueServerCertificate(host: String, publicKey subjectKey: Certificate.PublicKey, now: Date = Date()) throws -> Certificate {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let name: GeneralName = Self.ipAddressBytes(bare).map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) }
            ?? .dnsName(bare.lowercased())
        return try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: subjectKey,
            notValidBefore: now - Self.backdating, notValidAfter: now + Self.deviceLifetime,
            issuer: certificate.subject,
            subject: try DistinguishedName {
                OrganizationName("Baton")
                CommonName(String(bare.prefix(64)))
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([name])
                SubjectKeyIdentifier(hash: subjectKey)
                AuthorityKeyIdentifier(keyIdentifier: try certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: key)
    }

    /// The 4 or 16 bytes of `text` when it is an IPv4 or IPv6 address, else nil.
    static func ipAddressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
