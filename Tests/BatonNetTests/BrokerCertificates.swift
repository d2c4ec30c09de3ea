import Crypto
import Foundation
import SwiftASN1
import X509

/// A CA of its own, a server certificate for ``BrokerNetwork/brokerHost`` and a client
/// certificate, as PEM files in a directory: what a TLS mosquitto that requires client
/// certificates needs, for tests of the broker infrastructure itself (a Baton account's broker
/// uses the account's CA instead). The server key belongs to the `mosquitto` user (mode 0600),
/// which reads it after dropping privileges; the client key is root's (the clients run as root).
struct BrokerCertificates: Sendable {
    let ca: String
    let serverCertificate: String
    let serverKey: String
    let clientCertificate: String
    let clientKey: String
    private let authority: Certificate
    private let authorityKey: Certificate.PrivateKey

    /// Makes the files in `directory`; the client certificate's common name is `client`
    /// (the user name a broker with `use_identity_as_username` gives it).
    init(in directory: String, client: String = "capture") throws {
        authorityKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let name = try DistinguishedName { CommonName("Baton test broker CA \(UUID().uuidString.prefix(8))") }
        authority = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: authorityKey.publicKey,
            notValidBefore: Date() - 3600, notValidAfter: Date() + 86_400, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: authorityKey)
        ca = directory + "/ca.pem"
        try Self.write(try authority.serializeAsPEM().pemString, to: ca, mode: 0o644)

        let host = BrokerNetwork.brokerHost.split(separator: ".").compactMap { UInt8($0) }
        let server = try Self.issue(
            "broker", by: authority, key: authorityKey, in: directory, usage: .serverAuth,
            names: [.ipAddress(ASN1OctetString(contentBytes: ArraySlice(host))), .dnsName("broker")])
        try BrokerNetwork.handToMosquitto(server.key)
        serverCertificate = server.certificate
        serverKey = server.key
        let own = try Self.issue(client, by: authority, key: authorityKey, in: directory, usage: .clientAuth)
        clientCertificate = own.certificate
        clientKey = own.key
    }

    /// How the tests' clients reach the broker: with the CA and the client certificate.
    var clientTLS: MQTTClientTLS { MQTTClientTLS(cafile: ca, cert: clientCertificate, key: clientKey) }

    /// A further client certificate of this CA, with common name `name`, and its files in `directory`.
    func client(_ name: String, in directory: String) throws -> MQTTClientTLS {
        let (certificate, key) = try Self.issue(name, by: authority, key: authorityKey, in: directory, usage: .clientAuth)
        return MQTTClientTLS(cafile: ca, cert: certificate, key: key)
    }

    /// A TLS listener on `@PORT@` at `@HOST@` (as ``BrokerNetwork/startMosquitto(config:name:port:clientTLS:)``
    /// fills them in) that requires a client certificate of this CA and takes its common name as
    /// the user name.
    var listenerConfig: String {
        """
        listener @PORT@ @HOST@
        cafile \(ca)
        certfile \(serverCertificate)
        keyfile \(serverKey)
        require_certificate true
        use_identity_as_username true
        set_tcp_nodelay true

        """
    }

    private static func issue(
        _ name: String, by authority: Certificate, key authorityKey: Certificate.PrivateKey, in directory: String,
        usage: ExtendedKeyUsage.Usage, names: [GeneralName] = []
    ) throws -> (certificate: String, key: String) {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
            notValidBefore: Date() - 3600, notValidAfter: Date() + 86_400, issuer: authority.subject,
            subject: try DistinguishedName { CommonName(name) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !names.isEmpty { SubjectAlternativeNames(names) }
            },
            issuerPrivateKey: authorityKey)
        let stem = directory + "/" + name.filter { $0.isLetter || $0.isNumber || $0 == "-" }
        try write(try certificate.serializeAsPEM().pemString, to: stem + ".pem", mode: 0o644)
        try write(try key.serializeAsPEM().pemString, to: stem + ".key", mode: 0o600)
        return (stem + ".pem", stem + ".key")
    }

    private static func write(_ text: String, to path: String, mode: Int) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }
}
