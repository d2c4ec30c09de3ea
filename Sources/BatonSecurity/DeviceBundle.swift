import BatonCore
import Crypto
import X509

/// Everything a device needs to join an account, for carrying by hand where there is no network
/// path (`baton account export-device` / `import`): the account's CA certificate, and a device
/// id, key and certificate the CA made for it. It holds a private key: it is a secret.
public struct DeviceBundle: Sendable {
    /// The new device's id, as its certificate names it.
    public var deviceID: String
    /// The name it was made for.
    public var name: String
    /// The account's CA certificate.
    public var accountCertificate: Certificate
    /// The new device's certificate, signed by the account's CA.
    public var certificate: Certificate
    /// The new device's key.
    public var key: Certificate.PrivateKey
    /// The account's broker, when it has one: the device that imports the file uses it.
    public var broker: BrokerSettings? = nil

    static let format = "baton-device-bundle"

    /// A new device named `name`: a fresh id and key, and a certificate `authority` signs.
    public static func make(named name: String, by authority: CertificateAuthority, id: String) throws -> DeviceBundle {
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let certificate = try authority.issueDeviceCertificate(id: id, name: name, publicKey: key.publicKey)
        return DeviceBundle(deviceID: id, name: name, accountCertificate: authority.certificate, certificate: certificate, key: key)
    }

    /// The bundle as text: a JSON object of `format` (`"baton-device-bundle"`), `version` (1),
    /// `device_id`, `name`, and `account_certificate`, `device_certificate` and `device_key` as
    /// PEM blocks (the key PKCS #8), each ending in a newline so that they concatenate into a
    /// PEM file as they are; and `broker` (`{"url", "ca"}`, see ``BrokerSettings/json``) when
    /// the account has one, which Batons before it ignore.
    public func serialized() throws -> String {
        var members: [JSON.Member] = [
            .init("format", .string(Self.format)), .init("version", .int(1)),
            .init("device_id", .string(deviceID)), .init("name", .string(name)),
            .init("account_certificate", .string(try accountCertificate.serializeAsPEM().pemString + "\n")),
            .init("device_certificate", .string(try certificate.serializeAsPEM().pemString + "\n")),
            .init("device_key", .string(try key.serializeAsPEM().pemString + "\n")),
        ]
        if let broker { members.append(.init("broker", broker.json)) }
        return JSON.object(members).serialized(pretty: true) + "\n"
    }

    /// Reads a bundle and checks it: the certificate is the account's, names the id, and goes
    /// with the key. PEM blocks are read with or without their final newline (device files
    /// written by earlier versions have none). Errors say what is wrong, never what the key is.
    public static func parse(_ text: String) throws -> DeviceBundle {
        guard let json = try? JSON.parse(text), json["format"]?.stringValue == format else {
            throw SecurityError.damaged("not a device file made by baton account export-device")
        }
        guard json["version"]?.intValue == 1 else { throw SecurityError.damaged("a device file of a newer Baton (version \(json["version"].map { "\($0)" } ?? "?"))") }
        guard let id = json["device_id"]?.stringValue, let name = json["name"]?.stringValue,
              let accountPEM = json["account_certificate"]?.stringValue,
              let devicePEM = json["device_certificate"]?.stringValue, let keyPEM = json["device_key"]?.stringValue else {
            throw SecurityError.damaged("the device file lacks a field (device_id, name, account_certificate, device_certificate, device_key)")
        }
        // Files without `broker` (made before it, or for an account without one) read as before.
        var broker: BrokerSettings?
        if let entry = json["broker"] {
            do { broker = try BrokerSettings(json: entry) } catch {
                throw SecurityError.damaged("the device file's broker cannot be used: \(error)")
            }
        }
        var bundle: DeviceBundle
        do {
            bundle = DeviceBundle(
                deviceID: id, name: name, accountCertificate: try Certificate(pemEncoded: accountPEM),
                certificate: try Certificate(pemEncoded: devicePEM), key: try Certificate.PrivateKey(pemEncoded: keyPEM))
        } catch {
            throw SecurityError.damaged("the device file's certificates or key cannot be read")
        }
        bundle.broker = broker
        guard try DeviceCertificate.verify(bundle.certificate, issuedBy: bundle.accountCertificate) == id.lowercased() else {
            throw SecurityError.damaged("the device file's certificate names another device")
        }
        guard bundle.certificate.publicKey == bundle.key.publicKey else {
            throw SecurityError.damaged("the device file's key does not go with its certificate")
        }
        return bundle
    }
}
