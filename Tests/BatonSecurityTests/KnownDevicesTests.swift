import BatonSecurity
import Foundation
import Testing

/// The pins a device keeps of the devices it met: what a handshake proved, never what a source
/// said, and refused when it changes.
@Suite("Devices pinned to what their handshakes proved")
struct KnownDevicesTests {
    @Test func aStrangerProvingTheIDOfADeviceOfTheAccountIsRefused() throws {
        try TwoAccounts.with { t throws in
            let known = KnownDevices(folder: t.home, own: t.owner.fingerprint)
            // The TV was enrolled here: ours before any handshake.
            #expect(known.isOwn(t.tv.deviceID))
            // Discovery says the TV is of the stranger's account: a device of ours must prove ours.
            #expect(try known.expectation(for: t.tv.deviceID, claimed: .account(t.stranger.fingerprint)) == .ownAccount)
            // A stranger's handshake naming the TV's id.
            let impostor = PeerIdentity(authorization: .anonymous, deviceID: t.tv.deviceID, account: t.stranger.fingerprint, publicKey: t.stranger.key.publicKey)
            #expect(throws: SecurityError.self) { try known.check(impostor) }
        }
    }

    @Test func aDeviceOfAnotherAccountIsPinnedOnFirstContactAndMustComeBackTheSame() throws {
        try TwoAccounts.with { t throws in
            let known = KnownDevices(folder: t.home, own: t.owner.fingerprint)
            let id = t.stranger.deviceID
            let first = PeerIdentity(authorization: .anonymous, deviceID: id, account: t.stranger.fingerprint, publicKey: t.stranger.key.publicKey)
            try known.check(first)
            try known.check(first)
            #expect(known.pin(for: id)?.account == t.stranger.fingerprint)
            #expect(!known.isOwn(id))

            // Another key under the same id and account.
            var rekeyed = first
            rekeyed.publicKey = t.tv.key.publicKey
            #expect(throws: SecurityError.refused(
                "the key of device \(id) (account \(t.stranger.fingerprint.short)…) changed since it was first met: refused (if it was set up again, forget it with `baton account forget \(id)`)")) {
                try known.check(rekeyed)
            }
            // Another account claimed for it, by a source or a handshake.
            #expect(try known.expectation(for: id, claimed: .account(t.stranger.fingerprint)) == .account(t.stranger.fingerprint))
            var moved = first
            moved.account = AccountFingerprint(hex: String(repeating: "ab", count: 32))
            #expect(throws: SecurityError.self) { try known.check(moved) }
            #expect(throws: SecurityError.self) {
                try known.expectation(for: id, claimed: .account(AccountFingerprint(hex: String(repeating: "cd", count: 32))!))
            }

            // Pinned in the file: another process sees it; forgetting lets a new key in.
            KnownDevices.flush()
            let again = KnownDevices(folder: t.home, own: t.owner.fingerprint)
            #expect(again.pin(for: id.uppercased()) == known.pin(for: id))
            #expect(try again.forget(id))
            #expect(try !again.forget(id))
            #expect(KnownDevices(folder: t.home, own: t.owner.fingerprint).pin(for: id) == nil)
            try again.check(rekeyed)
        }
    }

    @Test func theAccountsCATakesAnIDOverButNoOtherAccountCan() throws {
        try TwoAccounts.with { t throws in
            try withFolder { folder throws in
                // A device that never saw the enrolment: the TV's id met first as a stranger's.
                let known = KnownDevices(folder: folder, own: t.owner.fingerprint)
                let impostor = PeerIdentity(authorization: .anonymous, deviceID: t.tv.deviceID, account: t.stranger.fingerprint, publicKey: t.stranger.key.publicKey)
                try known.check(impostor)
                #expect(!known.isOwn(t.tv.deviceID))
                // The real TV proves our account: our CA names an id only for a device the owner enrolled.
                let real = PeerIdentity(authorization: .sameAccount, deviceID: t.tv.deviceID, account: t.owner.fingerprint, publicKey: t.tv.key.publicKey)
                try known.check(real)
                #expect(known.isOwn(t.tv.deviceID))
                // And from then on no other account gets it back.
                #expect(throws: SecurityError.self) { try known.check(impostor) }
                #expect(try known.expectation(for: t.tv.deviceID, claimed: .account(t.stranger.fingerprint)) == .ownAccount)
            }
        }
    }

    @Test func aNameIsLearntFromADeviceOfTheAccountButNotItsConflictRename() throws {
        try TwoAccounts.with { t throws in
            let known = KnownDevices(folder: t.home, own: t.owner.fingerprint)
            known.learnName("Living Room TV", for: t.tv.deviceID)
            known.learnName("Living Room TV (2)", for: t.tv.deviceID)
            #expect(known.pin(for: t.tv.deviceID)?.name == "Living Room TV")
            known.learnName("Den TV", for: t.tv.deviceID)
            #expect(known.pin(for: t.tv.deviceID)?.name == "Den TV")
            // Not for a device of another account.
            let theirs = PeerIdentity(authorization: .anonymous, deviceID: t.stranger.deviceID, account: t.stranger.fingerprint, publicKey: t.stranger.key.publicKey)
            try known.check(theirs)
            known.learnName("Living Room TV", for: t.stranger.deviceID)
            #expect(known.pin(for: t.stranger.deviceID)?.name == "")
            #expect(KnownDevices.isConflictRename("TV (12)", of: "TV"))
            #expect(!KnownDevices.isConflictRename("TV (x)", of: "TV"))
            #expect(!KnownDevices.isConflictRename("TV2 (2)", of: "TV"))
        }
    }
}
