import BatonCore
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DeviceCredentials {
    /// The account's half of enrolment over the network: a certificate for device `deviceID`
    /// (a UUID) named `name`, for the key `publicKey` it proved it holds, recorded among the
    /// enrolled in `folder`. Only a device holding the account's key can; an id the account
    /// revoked is refused, so a revoked device cannot come back under its old id, and so is this
    /// device's own id.
    public func enrol(deviceID: String, name: String, publicKey: Certificate.PublicKey, in folder: ConfigurationFolder, now: Date = Date()) throws -> Certificate {
        let (authority, id, name) = try enrolment(deviceID: deviceID, name: name)
        return try folder.withLock {
            try refuseRevoked(id, in: folder)
            let certificate = try authority.issueDeviceCertificate(id: id, name: name, publicKey: publicKey, now: now)
            try EnrolledDevice.record(EnrolledDevice(certificate: certificate, id: id, name: name), in: folder)
            return certificate
        }
    }

    /// Throws what ``enrol(deviceID:name:publicKey:in:now:)`` would refuse device `deviceID`
    /// named `name` for, changing nothing: what an agent asks before it spends an invite code.
    public func checkEnrolment(deviceID: String, name: String, in folder: ConfigurationFolder) throws {
        let (_, id, _) = try enrolment(deviceID: deviceID, name: name)
        try refuseRevoked(id, in: folder)
    }

    /// The account's key, and the id and name as certified, or why the device cannot be enrolled.
    private func enrolment(deviceID: String, name: String) throws -> (CertificateAuthority, id: String, name: String) {
        guard let authority else {
            throw SecurityError.refused("this device does not hold the account's key; enrol from the device that made the account")
        }
        // The id goes into a `urn:uuid:` name: nothing else may.
        guard let uuid = UUID(uuidString: deviceID) else {
            throw SecurityError.refused("the device ID \"\(deviceID.prefix(40))\" is not a UUID")
        }
        let id = uuid.uuidString.lowercased()
        // A second device under our id could pass for this one wherever the id is checked.
        guard id != self.deviceID else { throw SecurityError.refused("device ID \(id) is this device's own") }
        let name = String(name.trimmingCharacters(in: .whitespacesAndNewlines).prefix(64))
        guard !name.isEmpty else { throw SecurityError.refused("the device's name is empty") }
        return (authority, id, name)
    }

    private func refuseRevoked(_ id: String, in folder: ConfigurationFolder) throws {
        let revocations = try RevocationList.load(from: folder, accountCertificate: accountCertificate)
        guard !revocations.entries.contains(where: { $0.id == id }) else {
            throw SecurityError.refused("device ID \(id) was revoked")
        }
    }

    /// The new device's half: makes this device, with the id and key it already has in `folder`,
    /// a device of the account whose certificate is `accountCertificate`, using the certificate
    /// that account issued it. The certificate must be the account's, valid at `now`, name this
    /// device's id and be for this device's key; `revocationList`, if given, must be the
    /// account's signed list, and must not revoke this device. Checks come before any change.
    /// The account files replaced are moved to `replaced-<time>/`, as ``install(_:in:now:)``
    /// does; no account key is written, as this device does not hold it. `broker`, the
    /// account's broker the enrolling agent sent, becomes this device's account broker, as a
    /// device file's does on import; with none, the device has none (its previous account's
    /// moved aside with the rest).
    public static func join(accountCertificate: Certificate, deviceCertificate: Certificate, revocationList: String?,
                            broker: BrokerSettings? = nil, in folder: ConfigurationFolder, now: Date = Date()) throws -> DeviceCredentials {
        guard case .isCertificateAuthority = try? accountCertificate.extensions.basicConstraints else {
            throw SecurityError.refused("the account certificate received is not a certificate authority")
        }
        let named: String
        do {
            named = try DeviceCertificate.verify(deviceCertificate, issuedBy: accountCertificate, now: now)
        } catch SecurityError.refused(let why) {
            throw SecurityError.refused("the certificate received for this device does not check out: \(why)")
        }
        let revocations = try revocationList.map { try RevocationList.verify($0, accountCertificate: accountCertificate) }
        return try folder.withLock {
            guard let id = ConfigurationFolder.parseID(try folder.read("device-id")),
                  let keyPEM = try folder.readKey(files.deviceKey) else {
                throw SecurityError.refused("this device has no id and key in \(folder.path) yet to join with")
            }
            let key: Certificate.PrivateKey
            do { key = try Certificate.PrivateKey(pemEncoded: keyPEM) } catch {
                throw SecurityError.damaged("\(folder.file(files.deviceKey)) cannot be read")
            }
            guard named == id else {
                throw SecurityError.refused("the certificate received names device \(named), not this device (\(id))")
            }
            guard deviceCertificate.publicKey == key.publicKey else {
                throw SecurityError.refused("the certificate received is for another key, not this device's")
            }
            if let revocations, revocations.revokes(deviceCertificate, id: id) {
                throw SecurityError.refused("the account's revocation list revokes this device (\(id))")
            }
            try moveAccountAside(in: folder, now: now)
            let credentials = try DeviceCredentials(
                deviceID: id, accountCertificate: accountCertificate, accountKey: nil, certificate: deviceCertificate, key: key)
            try folder.write(id + "\n", to: "device-id", mode: 0o644)
            // Written here rather than through `RevocationList.adopt`, which takes the lock we hold.
            if let revocationList { try folder.write(revocationList, to: RevocationList.file, mode: 0o644) }
            try credentials.save(to: folder)
            if let broker { try folder.setBroker(broker) }
            return credentials
        }
    }
}
