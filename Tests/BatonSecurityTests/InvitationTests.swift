import BatonSecurity
import Foundation
import Testing

@Suite("Invitations kept by the account's device")
struct InvitationTests {
    @Test func aCodeWorksOnceAndOnlyItsHashIsKept() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let now = Date(timeIntervalSince1970: 1_800_000_000.25)
            let (code, expires) = try owner.invite(in: home, expiresIn: 600, now: now)
            #expect(expires == Date(timeIntervalSince1970: 1_800_000_600))
            #expect(code.matches(owner.fingerprint))
            #expect(try mode(home.file("invites.json")) == 0o600)
            let stored = try #require(try home.read("invites.json"))
            let secretHex = code.secret.map { String(format: "%02x", $0) }.joined()
            #expect(!stored.contains(secretHex) && !stored.contains(code.text) && !stored.contains(code.text.filter { $0 != "-" }))

            try owner.redeemInvite(secret: code.secret, in: home, now: now + 60)
            #expect(throws: SecurityError.refused("the invite code has already been used")) {
                try owner.redeemInvite(secret: code.secret, in: home, now: now + 61)
            }
            // Read back by another process's credentials: the use is on disk.
            let again = try #require(try DeviceCredentials.load(from: home))
            #expect(throws: SecurityError.refused("the invite code has already been used")) {
                try again.redeemInvite(secret: code.secret, in: home, now: now + 62)
            }
        }
    }

    @Test func anExpiredOrUnknownCodeIsRefused() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let (code, _) = try owner.invite(in: home, expiresIn: 60, now: now)
            #expect(throws: SecurityError.refused("the invite code expired at 2027-01-15T08:01:00Z")) {
                try owner.redeemInvite(secret: code.secret, in: home, now: now + 60)
            }
            #expect(throws: SecurityError.refused("the invite code is not known to this device")) {
                try owner.redeemInvite(secret: [1, 2, 3, 4, 5, 6, 7], in: home, now: now)
            }
            // A code made for this account elsewhere is as unknown as a guess.
            let forged = InviteCode.make(for: owner.fingerprint)
            #expect(throws: SecurityError.refused("the invite code is not known to this device")) {
                try owner.redeemInvite(secret: forged.secret, in: home, now: now)
            }
        }
    }

    @Test func codesExpiredOverADayAgoAreForgotten() throws {
        try withFolder { home in
            let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let (old, _) = try owner.invite(in: home, expiresIn: 60, now: now)
            let (recent, _) = try owner.invite(in: home, expiresIn: 60, now: now + 86_000)
            _ = try owner.invite(in: home, expiresIn: 60, now: now + 86_400 + 61)
            let stored = try #require(try home.read("invites.json"))
            let kept = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [[String: Any]])
            #expect(kept.count == 2)
            #expect(throws: SecurityError.refused("the invite code is not known to this device")) {
                try owner.redeemInvite(secret: old.secret, in: home, now: now + 86_400 + 62)
            }
            #expect(throws: SecurityError.refused("the invite code expired at 2027-01-16T07:54:20Z")) {
                try owner.redeemInvite(secret: recent.secret, in: home, now: now + 86_400 + 62)
            }
        }
    }

    @Test func onlyTheDeviceHoldingTheAccountKeyInvites() throws {
        try withFolder { home in
            try withFolder { other in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let joined = try DeviceCredentials.install(
                    DeviceBundle.parse(owner.exportDevice(named: "TV", in: home).serialized()), in: other)
                #expect(throws: SecurityError.refused("this device does not hold the account's key; invite from the device that made the account")) {
                    try joined.invite(in: other, expiresIn: 600)
                }
                #expect(!FileManager.default.fileExists(atPath: other.file("invites.json")))
            }
        }
    }
}
