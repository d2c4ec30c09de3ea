import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What this device proves itself with: its key and certificate, the account CA's certificate it
/// trusts, and (on the device that made the account, or one given it) the CA's key.
///
/// Kept in the configuration folder: `account.pem` (the CA certificate), `account-key.pem`
/// (the CA key, 0600, absent on devices that only joined), `device.pem` and `device-key.pem`
/// (0600), `device-id`.
public struct DeviceCredentials: Sendable {
    /// This device's id, as its certificate names it.
    public let deviceID: String
    /// The account's CA certificate.
    public let accountCertificate: Certificate
    /// The account's CA key, when this device holds it.
    public let accountKey: Certificate.PrivateKey?
    /// This device's certificate, signed by the account CA.
    public let certificate: Certificate
    /// This device's key.
    public let key: Certificate.PrivateKey
    /// The account's fingerprint.
    public let fingerprint: AccountFingerprint

    init(deviceID: String, accountCertificate: Certificate, accountKey: Certificate.PrivateKey?,
         certificate: Certificate, key: Certificate.PrivateKey) throws {
        self.deviceID = deviceID
        self.accountCertificate = accountCertificate
        self.accountKey = accountKey
        self.certificate = certificate
        self.key = key
        self.fingerprint = try AccountFingerprint(of: accountCertificate)
    }

    /// The account's authority, when this device holds its key.
    public var authority: CertificateAuthority? {
        accountKey.map { CertificateAuthority(certificate: accountCertificate, key: $0) }
    }

    static let files = (account: "account.pem", accountKey: "account-key.pem", device: "device.pem", deviceKey: "device-key.pem")

    /// This device's credentials from `folder`, made on first use: a new account (CA) and a
    /// device certificate it signs for `deviceName`. Two processes doing this at once make one
    /// account: the second waits for the folder's lock and reads what the first wrote.
    public static func loadOrCreate(in folder: ConfigurationFolder, deviceName: String) throws -> DeviceCredentials {
        if let existing = try load(from: folder) { return existing }
        let id = try folder.deviceID()
        return try folder.withLock {
            if let existing = try load(from: folder) { return existing }
            let authority = try CertificateAuthority.create()
            let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
            let certificate = try authority.issueDeviceCertificate(id: id, name: deviceName, publicKey: key.publicKey)
            let credentials = try DeviceCredentials(
                deviceID: id, accountCertificate: authority.certificate, accountKey: authority.key,
                certificate: certificate, key: key)
            try credentials.save(to: folder)
            return credentials
        }
    }

    /// The credentials stored in `folder`; nil when there are none yet.
    public static func load(from folder: ConfigurationFolder) throws -> DeviceCredentials? {
        guard let accountPEM = try folder.read(files.account), let devicePEM = try folder.read(files.device),
              let keyPEM = try folder.readKey(files.deviceKey) else { return nil }
        do {
            let accountCertificate = try Certificate(pemEncoded: accountPEM)
            let certificate = try Certificate(pemEncoded: devicePEM)
            let key = try Certificate.PrivateKey(pemEncoded: keyPEM)
            let accountKey = try folder.readKey(files.accountKey).map { try Certificate.PrivateKey(pemEncoded: $0) }
            guard certificate.publicKey == key.publicKey else {
                throw SecurityError.damaged("\(folder.file(files.device)) does not belong to \(folder.file(files.deviceKey))")
            }
            let id = try DeviceCertificate.verify(certificate, issuedBy: accountCertificate)
            return try DeviceCredentials(
                deviceID: id, accountCertificate: accountCertificate, accountKey: accountKey, certificate: certificate, key: key)
        } catch let error as SecurityError {
            throw error
        } catch {
            throw SecurityError.damaged("the account in \(folder.path) cannot be read: \(error)")
        }
    }

    /// Writes every file; keys 0600, certificates 0644. The device certificate goes last, as
    /// ``load(from:)`` takes its presence to mean the rest is there.
    func save(to folder: ConfigurationFolder) throws {
        try folder.write(accountCertificate.serializeAsPEM().pemString + "\n", to: Self.files.account, mode: 0o644)
        if let accountKey { try folder.write(accountKey.serializeAsPEM().pemString + "\n", to: Self.files.accountKey) }
        try folder.write(key.serializeAsPEM().pemString + "\n", to: Self.files.deviceKey)
        try folder.write(certificate.serializeAsPEM().pemString + "\n", to: Self.files.device, mode: 0o644)
    }
}
