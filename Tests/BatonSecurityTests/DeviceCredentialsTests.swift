import BatonSecurity
import Crypto
import Foundation
import Testing
import X509

/// A fresh configuration folder under the temporary directory, removed afterwards.
func withFolder<T>(_ body: (ConfigurationFolder) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("baton-security-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(ConfigurationFolder(path: path + "/baton"))
}

func mode(_ path: String) throws -> Int {
    try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
}

@Suite("The account made on first use")
struct DeviceCredentialsTests {
    @Test func firstUseMakesAPrivateFolderAnAccountAndThisDevicesCertificate() throws {
        try withFolder { folder in
            let made = try DeviceCredentials.loadOrCreate(in: folder, deviceName: "Phone")
            #expect(try mode(folder.path) == 0o700)
            #expect(try mode(folder.file("account-key.pem")) == 0o600)
            #expect(try mode(folder.file("device-key.pem")) == 0o600)
            #expect(try DeviceCertificate.verify(made.certificate, issuedBy: made.accountCertificate) == made.deviceID)
            #expect(made.deviceID == (try folder.deviceID()))
            #expect(made.accountKey != nil)
            #expect(made.fingerprint.hex.count == 64)
            // Read back, the same account and device.
            let again = try #require(try DeviceCredentials.load(from: folder))
            #expect(again.fingerprint == made.fingerprint)
            #expect(again.certificate == made.certificate)
            #expect(again.deviceID == made.deviceID)
        }
    }

    @Test func twoAtOnceOnFirstUseMakeOneAccount() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("baton-security-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let folder = ConfigurationFolder(path: path + "/baton")
        let fingerprints = try await withThrowingTaskGroup(of: AccountFingerprint.self) { group in
            for _ in 0..<8 {
                group.addTask { try DeviceCredentials.loadOrCreate(in: folder, deviceName: "x").fingerprint }
            }
            return try await group.reduce(into: Set<AccountFingerprint>()) { $0.insert($1) }
        }
        #expect(fingerprints.count == 1)
    }

    @Test func damagedFilesAreReportedNotReplaced() throws {
        try withFolder { folder in
            _ = try DeviceCredentials.loadOrCreate(in: folder, deviceName: "x")
            try folder.write("not a certificate\n", to: "device.pem", mode: 0o644)
            #expect {
                try DeviceCredentials.loadOrCreate(in: folder, deviceName: "x")
            } throws: { error in
                guard case SecurityError.damaged(let why) = error else { return false }
                return why.contains(folder.path) && !why.contains("PRIVATE KEY")
            }
        }
    }

    @Test func aKeyThatDoesNotMatchItsCertificateIsReported() throws {
        try withFolder { folder in
            _ = try DeviceCredentials.loadOrCreate(in: folder, deviceName: "x")
            let stranger = Certificate.PrivateKey(P256.Signing.PrivateKey())
            try folder.write(try stranger.serializeAsPEM().pemString, to: "device-key.pem")
            #expect(throws: SecurityError.damaged("\(folder.file("device.pem")) does not belong to \(folder.file("device-key.pem"))")) {
                try DeviceCredentials.load(from: folder)
            }
        }
    }
}

@Suite("Device certificates")
struct DeviceCertificateTests {
    @Test func aCertificateFromAnotherAccountIsRefused() throws {
        let ours = try CertificateAuthority.create()
        let theirs = try CertificateAuthority.create()
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let foreign = try theirs.issueDeviceCertificate(id: "6f1c2a9e-0d4b-4c8e-9a57-3e2d1f0b7c64", name: "x", publicKey: key.publicKey)
        #expect(throws: SecurityError.refused("the certificate was not issued by this account")) {
            try DeviceCertificate.verify(foreign, issuedBy: ours.certificate)
        }
        #expect(try DeviceCertificate.verify(foreign, issuedBy: theirs.certificate) == "6f1c2a9e-0d4b-4c8e-9a57-3e2d1f0b7c64")
        #expect(try ours.fingerprint != theirs.fingerprint)
    }

    @Test func anExpiredCertificateIsRefused() throws {
        let authority = try CertificateAuthority.create()
        let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let old = try authority.issueDeviceCertificate(id: "x", name: "x", publicKey: key.publicKey, now: Date(timeIntervalSinceNow: -11 * 365 * 86_400))
        #expect(throws: SecurityError.refused("the certificate has expired")) {
            try DeviceCertificate.verify(old, issuedBy: authority.certificate)
        }
    }

    @Test func theAccountsOwnCertificateIsNotADevice() throws {
        let authority = try CertificateAuthority.create()
        #expect(throws: SecurityError.refused("the certificate is a certificate authority, not a device")) {
            try DeviceCertificate.verify(authority.certificate, issuedBy: authority.certificate)
        }
    }

    @Test func fingerprintsReadBackFromHex() throws {
        let fingerprint = try CertificateAuthority.create().fingerprint
        #expect(AccountFingerprint(hex: fingerprint.hex) == fingerprint)
        #expect(AccountFingerprint(hex: fingerprint.hex.uppercased()) == fingerprint)
        #expect(AccountFingerprint(hex: "xyz") == nil)
        #expect(fingerprint.short.count == 19)
    }
}
