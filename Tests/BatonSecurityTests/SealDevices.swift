@testable import BatonSecurity
import Crypto
import Foundation
import Testing
import X509

/// Two devices of one account for sealed handshakes: the owner's laptop (in `t.home`) and its TV,
/// installed in a folder of its own; and `t`'s stranger of another account.
struct SealDevices {
    var t: TwoAccounts
    var tv: DeviceCredentials
    var tvFolder: ConfigurationFolder

    static func with<T>(_ body: (SealDevices) throws -> T) throws -> T {
        try TwoAccounts.with { t in
            try withFolder { folder in
                try body(SealDevices(t: t, tv: try DeviceCredentials.install(t.tv, in: folder), tvFolder: folder))
            }
        }
    }

    var laptop: SealCredentials { get throws { try SealCredentials(t.owner) } }
    var tvSeal: SealCredentials { get throws { try SealCredentials(tv) } }
    var stranger: SealCredentials { get throws { try SealCredentials(t.stranger) } }
    var laptopStore: TrustStore { get throws { try TrustStore(folder: t.home, credentials: t.owner) } }
    var tvStore: TrustStore { get throws { try TrustStore(folder: tvFolder, credentials: tv) } }
    var strangerStore: TrustStore { get throws { try TrustStore(folder: t.elsewhere, credentials: t.stranger) } }

    /// The laptop dials the TV: both ends of the session, and who each proved the other to be.
    func laptopDialsTV(now: Date = Date()) throws -> (laptop: SealedSession, tv: SealedSession, tvIs: PeerIdentity, laptopIs: PeerIdentity) {
        let initiator = SealInitiator(credentials: try laptop, to: tv.deviceID, now: now)
        let answer = try SealResponder.respond(to: initiator.hello, credentials: try tvSeal, trust: try tvStore.trust, now: now)
        let (session, agent) = try initiator.finish(reply: answer.reply, trustStore: try laptopStore, expecting: .ownAccount, now: now)
        return (session, answer.session, agent, answer.peer)
    }
}

/// A self-signed certificate for `key` naming device `id`, as anyone can make.
func selfSignedDevice(id: String, key: Certificate.PrivateKey) throws -> Certificate {
    let name = try DistinguishedName { CommonName("not of any account") }
    return try Certificate(
        version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
        notValidBefore: Date() - 60, notValidAfter: Date() + 3600, issuer: name, subject: name,
        signatureAlgorithm: .ecdsaWithSHA256,
        extensions: try Certificate.Extensions { SubjectAlternativeNames([.uniformResourceIdentifier(DeviceCertificate.uri(forDevice: id))]) },
        issuerPrivateKey: key)
}

/// The ``SealError`` `body` throws, or nil when it throws none (any other error is a failure).
func sealError<T>(_ body: () throws -> T) -> SealError? {
    do {
        _ = try body()
        return nil
    } catch let error as SealError {
        return error
    } catch {
        Issue.record("not a SealError: \(error)")
        return nil
    }
}
