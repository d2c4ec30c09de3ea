import BatonCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DeviceCredentials {
    /// Makes a one-time invite code for this device's account, good for `expiresIn` seconds from
    /// `now` (to the whole second), and remembers it in `folder` (`invites.json`, by the hash of
    /// its secret only). Only a device holding the account's key can; it is also the one whose
    /// agent answers the code.
    public func invite(in folder: ConfigurationFolder, expiresIn: Double, now: Date = Date()) throws -> (code: InviteCode, expires: Date) {
        guard authority != nil else {
            throw SecurityError.refused("this device does not hold the account's key; invite from the device that made the account")
        }
        guard expiresIn.isFinite, expiresIn >= 1 else {
            throw SecurityError.refused("an invite code must last at least a second")
        }
        let code = InviteCode.make(for: fingerprint)
        // Whole seconds: what the file and the user are shown.
        let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + expiresIn).rounded(.down))
        try folder.withLock {
            var list = try Invitation.all(in: folder)
            list.append(Invitation(secretHash: Invitation.hash(code.secret), created: now, expires: expires, used: nil))
            try Invitation.store(list, in: folder, now: now)
        }
        return (code, expires)
    }

    /// Accepts the secret of an invite code this device made: refused if it is not known, was
    /// used, or has expired at `now`; otherwise it is marked used, on disk before this returns,
    /// so that the same code never works twice, even across processes.
    public func redeemInvite(secret: [UInt8], in folder: ConfigurationFolder, now: Date = Date()) throws {
        let hash = Invitation.hash(secret)
        try folder.withLock {
            var list = try Invitation.all(in: folder)
            guard let index = list.firstIndex(where: { $0.secretHash == hash }) else {
                throw SecurityError.refused("the invite code is not known to this device")
            }
            guard list[index].used == nil else { throw SecurityError.refused("the invite code has already been used") }
            guard now < list[index].expires else {
                throw SecurityError.refused("the invite code expired at \(ISO8601.format(list[index].expires))")
            }
            list[index].used = now
            try Invitation.store(list, in: folder, now: now)
        }
    }
}
