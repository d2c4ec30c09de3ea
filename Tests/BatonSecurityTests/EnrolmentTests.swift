import BatonSecurity
import Foundation
import Testing
import X509

@Suite("Enrolling by device file, and revoking")
struct EnrolmentTests {
    @Test func aDeviceFileMakesTheOtherDeviceOneOfTheAccount() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let stranger = try DeviceCredentials.loadOrCreate(in: other, deviceName: "TV")
                let text = try owner.exportDevice(named: "Living Room TV", in: home).serialized()
                let joined = try DeviceCredentials.install(DeviceBundle.parse(text), in: other)
                #expect(joined.fingerprint == owner.fingerprint)
                #expect(joined.accountKey == nil)
                #expect(try DeviceCertificate.verify(joined.certificate, issuedBy: owner.accountCertificate) == joined.deviceID)
                #expect(try other.deviceID() == joined.deviceID)
                // What it replaced is kept aside, and what is there now reads back.
                let aside = try FileManager.default.contentsOfDirectory(atPath: other.path).filter { $0.hasPrefix("replaced-") }
                #expect(aside.count == 1)
                let kept = ConfigurationFolder(path: other.file(aside[0]))
                #expect(try DeviceCredentials.load(from: kept)?.fingerprint == stranger.fingerprint)
                #expect(try DeviceCredentials.load(from: other)?.deviceID == joined.deviceID)
                #expect(try EnrolledDevice.all(in: home).map(\.name) == ["Living Room TV"])
            }
        }
    }

    @Test func onlyTheDeviceHoldingTheAccountKeyEnrolsAndRevokes() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let joined = try DeviceCredentials.install(
                    DeviceBundle.parse(owner.exportDevice(named: "TV", in: home).serialized()), in: other)
                #expect(throws: SecurityError.refused("this device does not hold the account's key; export from the device that made the account")) {
                    try joined.exportDevice(named: "x", in: other)
                }
                #expect(throws: SecurityError.refused("this device does not hold the account's key; revoke from the device that made the account")) {
                    try joined.revoke("TV", in: other)
                }
            }
        }
    }

    @Test("a device file holds the fields the README lists, each PEM block ending in a newline; older files without one still read")
    func deviceFileFieldsAndPEMNewlines() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let bundle = try owner.exportDevice(named: "TV", in: home)
            let text = try bundle.serialized()
            let json = try JSON(text)
            #expect(Set(json.keys) == ["format", "version", "device_id", "name", "account_certificate", "device_certificate", "device_key"])
            #expect(json["format"] as? String == "baton-device-bundle")
            #expect(json["version"] as? Int == 1)
            #expect(json["device_id"] as? String == bundle.deviceID)
            #expect(json["name"] as? String == "TV")
            let device = try #require(json["device_certificate"] as? String)
            let account = try #require(json["account_certificate"] as? String)
            let key = try #require(json["device_key"] as? String)
            #expect(device.hasPrefix("-----BEGIN CERTIFICATE-----\n") && device.hasSuffix("-----END CERTIFICATE-----\n"))
            #expect(account.hasPrefix("-----BEGIN CERTIFICATE-----\n") && account.hasSuffix("-----END CERTIFICATE-----\n"))
            #expect(key.hasPrefix("-----BEGIN PRIVATE KEY-----\n") && key.hasSuffix("-----END PRIVATE KEY-----\n"))
            // Concatenated as they are, they make a chain file: every marker on a line of its own.
            let chain = device + account
            #expect(chain.split(separator: "\n").filter { $0.hasPrefix("-----") }.count == 4)
            #expect(!chain.contains("----------"))
            #expect(try DeviceBundle.parse(text).deviceID == bundle.deviceID)

            // A file written before the fix, without the newlines, reads the same.
            let old = text.replacingOccurrences(of: #"-----\n""#, with: #"-----""#)
            #expect(old != text)
            #expect(try (JSON(old)["device_key"] as? String)?.hasSuffix("-----END PRIVATE KEY-----") == true)
            let read = try DeviceBundle.parse(old)
            #expect(read.deviceID == bundle.deviceID)
            #expect(read.certificate == bundle.certificate)
            #expect(read.key.publicKey == bundle.key.publicKey)
        }
    }

    @Test func damagedDeviceFilesAreRefusedWithoutSayingTheKey() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let good = try owner.exportDevice(named: "TV", in: home).serialized()
            #expect(throws: SecurityError.damaged("not a device file made by baton account export-device")) {
                try DeviceBundle.parse("hello")
            }
            let otherID = good.replacingOccurrences(of: #""device_id": ""#, with: #""device_id": "0"#)
            #expect(throws: SecurityError.damaged("the device file's certificate names another device")) {
                try DeviceBundle.parse(otherID)
            }
            // Another device's key in the file.
            let second = try owner.exportDevice(named: "Speaker", in: home).serialized()
            let keyOf = { (text: String) in try #require(JSON(text)["device_key"] as? String) }
            let swapped = good.replacingOccurrences(of: try escaped(keyOf(good)), with: try escaped(keyOf(second)))
            #expect(throws: SecurityError.damaged("the device file's key does not go with its certificate")) {
                try DeviceBundle.parse(swapped)
            }
        }
    }

    @Test func aRevocationListChecksOutOnlyUnchangedAndFromItsAccount() throws {
        try withFolder { home in
            try withFolder { elsewhere in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try owner.exportDevice(named: "TV", in: home)
                let (revoked, list) = try owner.revoke("TV", in: home)
                #expect(revoked.id == tv.deviceID && list.version == 1)
                #expect(list.revokes(tv.certificate, id: tv.deviceID))
                let text = try #require(try home.read("revocations.json"))
                #expect(try RevocationList.verify(text, accountCertificate: owner.accountCertificate) == list)
                // Changed after signing: the TV's id swapped for another.
                let tampered = text.replacingOccurrences(of: tv.deviceID, with: "00000000-0000-0000-0000-000000000000")
                #expect(throws: SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")) {
                    try RevocationList.verify(tampered, accountCertificate: owner.accountCertificate)
                }
                // Another account's CA cannot vouch for it.
                let stranger = try DeviceCredentials.loadOrCreate(in: elsewhere, deviceName: "x")
                #expect(throws: SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")) {
                    try RevocationList.verify(text, accountCertificate: stranger.accountCertificate)
                }
            }
        }
    }

    @Test func aDeviceAdoptsOnlyANewerList() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let joined = try DeviceCredentials.install(
                    DeviceBundle.parse(owner.exportDevice(named: "TV", in: home).serialized()), in: other)
                _ = try owner.exportDevice(named: "Speaker", in: home)
                _ = try owner.revoke("Speaker", in: home)
                let first = try #require(try home.read("revocations.json"))
                #expect(try RevocationList.adopt(first, in: other, accountCertificate: joined.accountCertificate))
                #expect(try !RevocationList.adopt(first, in: other, accountCertificate: joined.accountCertificate))
                _ = try owner.revoke("Speaker", in: home)
                let second = try #require(try home.read("revocations.json"))
                #expect(try RevocationList.adopt(second, in: other, accountCertificate: joined.accountCertificate))
                #expect(try RevocationList.load(from: other, accountCertificate: joined.accountCertificate).version == 2)
            }
        }
    }

    @Test func revokingANameTwoDevicesShareAsksForAnID() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let a = try owner.exportDevice(named: "TV", in: home)
            let b = try owner.exportDevice(named: "TV", in: home)
            #expect(throws: SecurityError.refused("several enrolled devices are named TV: \(a.deviceID), \(b.deviceID); give an id")) {
                try owner.revoke("TV", in: home)
            }
            #expect(throws: SecurityError.refused("no enrolled device is named Radio")) { try owner.revoke("Radio", in: home) }
            #expect(try owner.revoke(b.deviceID, in: home).0.id == b.deviceID)
        }
    }
}

/// The JSON object `text` holds, through Foundation (a reader independent of Baton's).
func JSON(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
}

/// `text` as it appears inside a JSON string.
func escaped(_ text: String) -> String {
    text.replacingOccurrences(of: "\n", with: "\\n")
}
