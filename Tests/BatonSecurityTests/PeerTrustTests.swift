import BatonCore
import BatonSecurity
import Crypto
import Foundation
import Testing
import X509

/// `certificate` in DER, as TLS carries it.
func der(_ certificate: Certificate) throws -> [UInt8] {
    try certificate.serializeAsPEM().derBytes
}

/// The chain a device of `credentials`' account presents: its certificate, then its account's.
func chain(of credentials: DeviceCredentials) throws -> [[UInt8]] {
    [try der(credentials.certificate), try der(credentials.accountCertificate)]
}

/// Two accounts, each in its own folder, and a device file of a second device of the first
/// (enrolled, not installed anywhere).
struct TwoAccounts {
    var home: ConfigurationFolder
    var owner: DeviceCredentials
    var tv: DeviceBundle
    var stranger: DeviceCredentials
    var elsewhere: ConfigurationFolder

    @discardableResult
    static func with<T>(_ body: (TwoAccounts) throws -> T) throws -> T {
        try withFolder { home in
            try withFolder { elsewhere in
                let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
                let tv = try owner.exportDevice(named: "TV", in: home)
                let stranger = try DeviceCredentials.loadOrCreate(in: elsewhere, deviceName: "Stranger")
                return try body(TwoAccounts(home: home, owner: owner, tv: tv, stranger: stranger, elsewhere: elsewhere))
            }
        }
    }

    /// Trust as the owner's device sees it, with the revocation list its folder holds.
    var trust: PeerTrust {
        get throws { PeerTrust(credentials: owner, revocations: try RevocationList.load(from: home, accountCertificate: owner.accountCertificate)) }
    }

    var tvChain: [[UInt8]] {
        get throws { [try der(tv.certificate), try der(tv.accountCertificate)] }
    }
}

@Suite("Deciding who a caller is")
struct ClassifyCallerTests {
    @Test func aDeviceOfTheAccountIsSameAccount() throws {
        try TwoAccounts.with { t in
            let identity = try t.trust.classifyCaller(chain: t.tvChain)
            #expect(identity == PeerIdentity(authorization: .sameAccount, deviceID: t.tv.deviceID, account: t.owner.fingerprint, publicKey: t.tv.key.publicKey))
            // The account certificate is not needed: the leaf's signature decides.
            #expect(try t.trust.classifyCaller(chain: [der(t.tv.certificate)]).authorization == .sameAccount)
        }
    }

    @Test func anotherAccountsDeviceIsAnonymousWithItsAccount() throws {
        try TwoAccounts.with { t in
            let identity = try t.trust.classifyCaller(chain: chain(of: t.stranger))
            #expect(identity.authorization == .anonymous)
            #expect(identity.deviceID == t.stranger.deviceID)
            #expect(identity.account == t.stranger.fingerprint)
            // Without its CA, or with ours beside it (which did not sign it), no account vouches
            // for it: the id is the certificate's own claim.
            for presented in [[try der(t.stranger.certificate)], [try der(t.stranger.certificate), try der(t.owner.accountCertificate)]] {
                #expect(try t.trust.classifyCaller(chain: presented) == PeerIdentity(authorization: .anonymous, deviceID: t.stranger.deviceID, account: nil, publicKey: t.stranger.certificate.publicKey))
            }
        }
    }

    @Test func aSelfSignedCertificateIsAnonymousWithTheIdItsURINames() throws {
        try TwoAccounts.with { t in
            let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
            let name = try DistinguishedName { CommonName("a client of no account") }
            let id = UUID().uuidString
            func selfSigned(_ names: SubjectAlternativeNames?) throws -> Certificate {
                try Certificate(
                    version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: key.publicKey,
                    notValidBefore: Date() - 60, notValidAfter: Date() + 3600, issuer: name, subject: name,
                    signatureAlgorithm: .ecdsaWithSHA256,
                    extensions: try Certificate.Extensions {
                        if let names { names }
                    },
                    issuerPrivateKey: key)
            }
            let named = try selfSigned(SubjectAlternativeNames([.uniformResourceIdentifier("urn:uuid:" + id)]))
            #expect(try t.trust.classifyCaller(chain: [der(named)]) == PeerIdentity(authorization: .anonymous, deviceID: id.lowercased(), account: nil, publicKey: key.publicKey))
            let nameless = try selfSigned(nil)
            #expect(try t.trust.classifyCaller(chain: [der(nameless)]) == PeerIdentity(authorization: .anonymous, deviceID: nil, account: nil, publicKey: key.publicKey))
        }
    }

    @Test func anExpiredOrNotYetValidCertificateIsRefusedWhoeverIssuedIt() throws {
        try TwoAccounts.with { t in
            let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
            let past = Date(timeIntervalSince1970: 1_000_000_000)
            for authority in [try #require(t.owner.authority), try #require(t.stranger.authority)] {
                let old = try authority.issueDeviceCertificate(id: UUID().uuidString, name: "old", publicKey: key.publicKey, now: past)
                #expect(throws: SecurityError.refused("the peer's certificate expired at 2011-09-07T01:46:40Z")) {
                    try t.trust.classifyCaller(chain: [der(old), der(authority.certificate)])
                }
                let future = try authority.issueDeviceCertificate(id: UUID().uuidString, name: "new", publicKey: key.publicKey, now: Date() + 86_400)
                #expect {
                    try t.trust.classifyCaller(chain: [der(future), der(authority.certificate)])
                } throws: { error in
                    guard case SecurityError.refused(let why) = error else { return false }
                    return why.hasPrefix("the peer's certificate is not valid until ")
                }
            }
        }
    }

    @Test func aRevokedDeviceIsRefusedNotServedAnonymously() throws {
        try TwoAccounts.with { t in
            _ = try t.owner.revoke("TV", in: t.home)
            #expect(throws: SecurityError.refused("the peer's device ID \(t.tv.deviceID) is revoked by this account")) {
                try t.trust.classifyCaller(chain: t.tvChain)
            }
            // The device is revoked, not one certificate: one issued to its id later is refused too.
            #expect(throws: SecurityError.self) {
                let again = try t.owner.authority!.issueDeviceCertificate(id: t.tv.deviceID, name: "TV", publicKey: t.tv.key.publicKey)
                _ = try t.trust.classifyCaller(chain: [der(again)])
            }
        }
    }

    @Test func noCertificateOrAnUnreadableOneIsRefused() throws {
        try TwoAccounts.with { t in
            #expect(throws: SecurityError.refused("the peer presented no certificate")) {
                try t.trust.classifyCaller(chain: [])
            }
            #expect(throws: SecurityError.refused("the peer's certificate chain cannot be read")) {
                try t.trust.classifyCaller(chain: [[0x30, 0x03, 0x02, 0x01, 0x00]])
            }
            #expect(throws: SecurityError.refused("the peer's certificate chain cannot be read")) {
                try t.trust.classifyCaller(chain: [try der(t.stranger.certificate), Array("garbage".utf8)])
            }
        }
    }

    @Test func theAccountsOwnCertificateIsNoDevice() throws {
        try TwoAccounts.with { t in
            #expect(throws: SecurityError.refused("the peer's certificate is refused: the certificate is a certificate authority, not a device")) {
                try t.trust.classifyCaller(chain: [der(t.owner.accountCertificate)])
            }
        }
    }
}

@Suite("Checking the agent a client dialled")
struct VerifyAgentTests {
    @Test func anAgentOfTheAccountWithTheAdvertisedIDIsAccepted() throws {
        try TwoAccounts.with { t in
            let identity = try t.trust.verifyAgent(chain: t.tvChain, deviceID: t.tv.deviceID.uppercased(), expecting: .ownAccount)
            #expect(identity.authorization == .sameAccount && identity.deviceID == t.tv.deviceID && identity.account == t.owner.fingerprint)
            #expect(try t.trust.verifyAgent(chain: t.tvChain, deviceID: nil, expecting: .account(t.owner.fingerprint)) == identity)
            #expect(try t.trust.verifyAgent(chain: t.tvChain, deviceID: nil, expecting: .anyAccount) == identity)
        }
    }

    @Test func anotherDeviceThanAdvertisedIsRefused() throws {
        try TwoAccounts.with { t in
            let expected = UUID().uuidString.lowercased()
            #expect(throws: SecurityError.refused("the agent presented device \(t.tv.deviceID), not the expected \(expected)")) {
                try t.trust.verifyAgent(chain: t.tvChain, deviceID: expected, expecting: .ownAccount)
            }
        }
    }

    @Test func anotherAccountsAgentIsRefusedUnlessThatAccountIsExpected() throws {
        try TwoAccounts.with { t in
            let theirs = try chain(of: t.stranger)
            #expect(throws: SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(t.stranger.fingerprint.short)…), not this one (\(t.owner.fingerprint.short)…)")) {
                try t.trust.verifyAgent(chain: theirs, deviceID: t.stranger.deviceID, expecting: .ownAccount)
            }
            #expect(throws: SecurityError.refused("the agent's certificate was not issued by this account (\(t.owner.fingerprint.short)…), nor by any account it presented")) {
                try t.trust.verifyAgent(chain: [theirs[0]], deviceID: nil, expecting: .ownAccount)
            }
            let identity = try t.trust.verifyAgent(chain: theirs, deviceID: t.stranger.deviceID, expecting: .account(t.stranger.fingerprint))
            #expect(identity == PeerIdentity(authorization: .anonymous, deviceID: t.stranger.deviceID, account: t.stranger.fingerprint, publicKey: t.stranger.certificate.publicKey))
            #expect(try t.trust.verifyAgent(chain: theirs, deviceID: nil, expecting: .anyAccount) == identity)
            let third = try CertificateAuthority.create().fingerprint
            #expect(throws: SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(t.stranger.fingerprint.short)…), not the expected one (\(third.short)…)")) {
                try t.trust.verifyAgent(chain: theirs, deviceID: nil, expecting: .account(third))
            }
            // Our own agent, when another account was advertised.
            #expect(throws: SecurityError.refused("the agent's certificate belongs to another account (fingerprint \(t.owner.fingerprint.short)…), not the expected one (\(t.stranger.fingerprint.short)…)")) {
                try t.trust.verifyAgent(chain: t.tvChain, deviceID: nil, expecting: .account(t.stranger.fingerprint))
            }
            #expect(throws: SecurityError.refused("the agent presented no account certificate with its own")) {
                try t.trust.verifyAgent(chain: [theirs[0]], deviceID: nil, expecting: .account(t.stranger.fingerprint))
            }
        }
    }

    @Test func aChainThatDoesNotHoldTogetherIsRefused() throws {
        try TwoAccounts.with { t in
            // The stranger's device certificate, with our CA claimed as its account.
            let forged = [try der(t.stranger.certificate), try der(t.owner.accountCertificate)]
            #expect(throws: SecurityError.refused("the agent's account certificate did not issue its device certificate")) {
                try t.trust.verifyAgent(chain: forged, deviceID: nil, expecting: .anyAccount)
            }
            // A device certificate where the account's should be.
            #expect(throws: SecurityError.refused("the agent's second certificate is not an account's certificate authority")) {
                try t.trust.verifyAgent(chain: [der(t.stranger.certificate), der(t.stranger.certificate)], deviceID: nil, expecting: .anyAccount)
            }
        }
    }

    @Test func aRevokedOrExpiredAgentIsRefused() throws {
        try TwoAccounts.with { t in
            _ = try t.owner.revoke("TV", in: t.home)
            #expect(throws: SecurityError.refused("the agent's device ID \(t.tv.deviceID) is revoked by this account")) {
                try t.trust.verifyAgent(chain: t.tvChain, deviceID: t.tv.deviceID, expecting: .ownAccount)
            }
            let old = try t.stranger.authority!.issueDeviceCertificate(
                id: t.stranger.deviceID, name: "x", publicKey: t.stranger.certificate.publicKey, now: Date(timeIntervalSince1970: 1_000_000_000))
            #expect(throws: SecurityError.refused("the agent's certificate expired at 2011-09-07T01:46:40Z")) {
                try t.trust.verifyAgent(chain: [der(old), der(t.stranger.accountCertificate)], deviceID: nil, expecting: .account(t.stranger.fingerprint))
            }
        }
    }

    @Test func aJoiningDevicePinsTheAccountItsCodeNames() throws {
        try TwoAccounts.with { t in
            // The stranger joins the owner's account: it checks the owner's agent against the code.
            let trust = PeerTrust(credentials: t.stranger, revocations: try RevocationList.load(from: t.elsewhere, accountCertificate: t.stranger.accountCertificate))
            let code = InviteCode.make(for: t.owner.fingerprint)
            let ownersChain = try chain(of: t.owner)
            #expect(try trust.verifyAgent(chain: ownersChain, deviceID: nil, expecting: .invitedBy(code)).account == t.owner.fingerprint)
            let otherCode = InviteCode.make(for: try CertificateAuthority.create().fingerprint)
            #expect {
                try trust.verifyAgent(chain: ownersChain, deviceID: nil, expecting: .invitedBy(otherCode))
            } throws: { error in
                guard case SecurityError.refused(let why) = error else { return false }
                return why.hasPrefix("the agent's certificate belongs to another account (fingerprint \(t.owner.fingerprint.short)…), not the one the invite code is for")
                    && !why.contains(otherCode.text)
            }
        }
    }
}
