import Crypto
import Foundation
import X509

/// A throwaway CA, a server certificate for localhost and a client certificate, as PEM files
/// in `directory`, for mosquitto's TLS listener and the client.
struct TestCertificates {
    let caPath: String
    let serverCertificatePath: String
    let serverKeyPath: String
    let clientCertificatePEM: String
    let clientKeyPEM: String
    let caPEM: String

    init(directory: URL) throws {
        let now = Date()
        let caKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let caName = try DistinguishedName { CommonName("Baton MQTT test CA") }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: caKey.publicKey,
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: caKey.publicKey)
            },
            issuerPrivateKey: caKey)

        func leaf(_ name: String, _ usage: ExtendedKeyUsage.Usage, _ sans: [GeneralName]) throws -> (Certificate, Certificate.PrivateKey) {
            let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
                notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName,
                subject: try DistinguishedName { CommonName(name) },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                    SubjectAlternativeNames(sans)
                    AuthorityKeyIdentifier(keyIdentifier: try ca.extensions.subjectKeyIdentifier?.keyIdentifier)
                },
                issuerPrivateKey: caKey)
            return (certificate, key)
        }
        let (server, serverKey) = try leaf("127.0.0.1", .serverAuth, [.dnsName("localhost")])
        let (client, clientKey) = try leaf("device-tls", .clientAuth, [.dnsName("device-tls")])

        caPEM = try ca.serializeAsPEM().pemString + "\n"
        caPath = directory.appendingPathComponent("ca.pem").path
        serverCertificatePath = directory.appendingPathComponent("server.pem").path
        serverKeyPath = directory.appendingPathComponent("server.key").path
        try caPEM.write(toFile: caPath, atomically: true, encoding: .utf8)
        try (server.serializeAsPEM().pemString + "\n").write(toFile: serverCertificatePath, atomically: true, encoding: .utf8)
        try (serverKey.serializeAsPEM().pemString + "\n").write(toFile: serverKeyPath, atomically: true, encoding: .utf8)
        clientCertificatePEM = try client.serializeAsPEM().pemString + "\n"
        clientKeyPEM = try clientKey.serializeAsPEM().pemString + "\n"
    }
}
