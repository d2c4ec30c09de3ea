import BatonSecurity
import Crypto
import Foundation
import Testing
import X509

@Suite("Enrolling over the network: both halves")
struct JoiningTests {
    @Test func aJoiningDeviceKeepsItsIDAndKeyAndTakesTheAccountsCertificate() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                // A list to pass on: the account revoked something before.
                _ = try owner.exportDevice(named: "Old phone", in: home)
                _ = try owner.revoke("Old phone", in: home)
                let certificate = try owner.enrol(deviceID: tv.deviceID.uppercased(), name: " Living Room TV ", publicKey: tv.certificate.publicKey, in: home)
                #expect(try DeviceCertificate.verify(certificate, issuedBy: owner.accountCertificate) == tv.deviceID)
                #expect(try EnrolledDevice.all(in: home).map(\.name) == ["Old phone", "Living Room TV"])
                #expect(try EnrolledDevice.all(in: home).last?.id == tv.deviceID)

                let joined = try DeviceCredentials.join(
                    accountCertificate: owner.accountCertificate, deviceCertificate: certificate,
                    revocationList: home.read("revocations.json"), in: other)
                #expect(joined.deviceID == tv.deviceID)
                #expect(joined.key.publicKey == tv.key.publicKey)
                #expect(joined.fingerprint == owner.fingerprint)
                #expect(joined.accountKey == nil)
                #expect(!FileManager.default.fileExists(atPath: other.file("account-key.pem")))
                #expect(try mode(other.file("device-key.pem")) == 0o600)
                #expect(try RevocationList.load(from: other, accountCertificate: joined.accountCertificate).version == 1)
                // What it was before is kept aside, whole.
                let aside = try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }
                #expect(aside.count == 1)
                let kept = ConfigurationFolder(path: other.file(aside[0]))
                #expect(try DeviceCredentials.load(from: kept)?.fingerprint == tv.fingerprint)
                #expect(FileManager.default.fileExists(atPath: kept.file("account-key.pem")))
                // And what is there now reads back.
                let loaded = try #require(try DeviceCredentials.load(from: other))
                #expect(loaded.deviceID == tv.deviceID && loaded.fingerprint == owner.fingerprint && loaded.accountKey == nil)
                #expect(try other.deviceID() == tv.deviceID)
            }
        }
    }

    @Test func aCertificateForAnotherKeyOrDeviceIsRefusedAndNothingChanges() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                let stranger = Certificate.PrivateKey(P256.Signing.PrivateKey())
                let otherKey = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: stranger.publicKey, in: home)
                #expect(throws: SecurityError.refused("the certificate received is for another key, not this device's")) {
                    try DeviceCredentials.join(accountCertificate: owner.accountCertificate, deviceCertificate: otherKey, revocationList: nil, in: other)
                }
                let someoneElse = UUID().uuidString.lowercased()
                let otherID = try owner.enrol(deviceID: someoneElse, name: "TV", publicKey: tv.certificate.publicKey, in: home)
                #expect(throws: SecurityError.refused("the certificate received names device \(someoneElse), not this device (\(tv.deviceID))")) {
                    try DeviceCredentials.join(accountCertificate: owner.accountCertificate, deviceCertificate: otherID, revocationList: nil, in: other)
                }
                // Signed by one account, offered as another's.
                let good = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: tv.certificate.publicKey, in: home)
                #expect(throws: SecurityError.refused("the certificate received for this device does not check out: the certificate was not issued by this account")) {
                    try DeviceCredentials.join(accountCertificate: tv.accountCertificate, deviceCertificate: good, revocationList: nil, in: other)
                }
                #expect(throws: SecurityError.refused("the account certificate received is not a certificate authority")) {
                    try DeviceCredentials.join(accountCertificate: owner.certificate, deviceCertificate: good, revocationList: nil, in: other)
                }
                // Another account's revocation list.
                _ = try tv.exportDevice(named: "x", in: other)
                _ = try tv.revoke("x", in: other)
                let foreignList = try #require(try other.read("revocations.json"))
                #expect(throws: SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")) {
                    try DeviceCredentials.join(accountCertificate: owner.accountCertificate, deviceCertificate: good, revocationList: foreignList, in: other)
                }
                #expect(try DeviceCredentials.load(from: other)?.fingerprint == tv.fingerprint)
                #expect(try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }.isEmpty)
            }
        }
    }

    @Test func aJoinStoresTheAccountsBrokerOnlyOnceEveryCheckPassed() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                try other.setBroker(try BrokerSettings(url: "mqtt://old.home"))
                let broker = try BrokerSettings(url: "mqtts://hub.home:8884")
                // Refused: the TV's own broker stays, and nothing is moved aside.
                let stranger = Certificate.PrivateKey(P256.Signing.PrivateKey())
                let otherKey = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: stranger.publicKey, in: home)
                #expect(throws: SecurityError.self) {
                    try DeviceCredentials.join(
                        accountCertificate: owner.accountCertificate, deviceCertificate: otherKey, revocationList: nil, broker: broker, in: other)
                }
                #expect(try other.broker()?.url == "mqtt://old.home:1883")
                #expect(try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }.isEmpty)

                let good = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: tv.certificate.publicKey, in: home)
                _ = try DeviceCredentials.join(
                    accountCertificate: owner.accountCertificate, deviceCertificate: good, revocationList: nil, broker: broker, in: other)
                #expect(try other.broker() == broker)
                #expect(try mode(other.file(ConfigurationFolder.brokerFile)) == 0o600)
                // The old account's broker went aside with the rest of it.
                let aside = try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }
                #expect(try ConfigurationFolder(path: other.file(try #require(aside.first))).broker()?.url == "mqtt://old.home:1883")
            }
        }
    }

    @Test func aRevokedDeviceCannotComeBack() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                let certificate = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: tv.certificate.publicKey, in: home)
                _ = try owner.revoke(tv.deviceID, in: home)
                #expect(throws: SecurityError.refused("device ID \(tv.deviceID) was revoked")) {
                    try owner.enrol(deviceID: tv.deviceID, name: "TV again", publicKey: tv.certificate.publicKey, in: home)
                }
                // A certificate from before the revocation, with the list that revokes it.
                #expect(throws: SecurityError.refused("the account's revocation list revokes this device (\(tv.deviceID))")) {
                    try DeviceCredentials.join(accountCertificate: owner.accountCertificate, deviceCertificate: certificate,
                                               revocationList: home.read("revocations.json"), in: other)
                }
            }
        }
    }

    @Test func onlyTheAccountsKeyEnrolsAndOnlyUUIDs() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let joined = try DeviceCredentials.install(
                    DeviceBundle.parse(owner.exportDevice(named: "TV", in: home).serialized()), in: other)
                let key = Certificate.PrivateKey(P256.Signing.PrivateKey()).publicKey
                #expect(throws: SecurityError.refused("this device does not hold the account's key; enrol from the device that made the account")) {
                    try joined.enrol(deviceID: UUID().uuidString, name: "x", publicKey: key, in: other)
                }
                #expect(throws: SecurityError.refused("the device ID \"../../etc\" is not a UUID")) {
                    try owner.enrol(deviceID: "../../etc", name: "x", publicKey: key, in: home)
                }
                #expect(throws: SecurityError.refused("device ID \(owner.deviceID) is this device's own")) {
                    try owner.enrol(deviceID: owner.deviceID, name: "x", publicKey: key, in: home)
                }
                #expect(throws: SecurityError.refused("the device's name is empty")) {
                    try owner.enrol(deviceID: UUID().uuidString, name: "  ", publicKey: key, in: home)
                }
            }
        }
    }

    @Test func replacingTwiceInOneSecondKeepsBothBackups() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                let now = Date(timeIntervalSince1970: 1_800_000_000)
                let certificate = try owner.enrol(deviceID: tv.deviceID, name: "TV", publicKey: tv.certificate.publicKey, in: home)
                _ = try DeviceCredentials.join(accountCertificate: owner.accountCertificate, deviceCertificate: certificate, revocationList: nil, in: other, now: now)
                _ = try DeviceCredentials.install(DeviceBundle.parse(owner.exportDevice(named: "TV", in: home).serialized()), in: other, now: now)
                let aside = try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }.sorted()
                #expect(aside == ["replaced-20270115T080000Z", "replaced-20270115T080000Z-2"])
                #expect(try DeviceCredentials.load(from: ConfigurationFolder(path: other.file(aside[0])))?.fingerprint == tv.fingerprint)
                #expect(try DeviceCredentials.load(from: ConfigurationFolder(path: other.file(aside[1])))?.deviceID == tv.deviceID)
            }
        }
    }
}
