@testable import BatonSecurity
import Crypto
import Foundation
import Testing
import X509

/// The sealed handshake over a broker: each side proves itself with a signature by its device key,
/// and is judged by the same trust rules as in the TLS handshake.
@Suite("The sealed handshake")
struct SealHandshakeTests {
    @Test func theTwoDevicesOfAnAccountProveThemselvesAndTalkBothWays() throws {
        try SealDevices.with { d in
            let dialled = try d.laptopDialsTV()
            var laptop = dialled.laptop, tv = dialled.tv
            let tvIs = dialled.tvIs, laptopIs = dialled.laptopIs
            #expect(tvIs.authorization == .sameAccount && tvIs.deviceID == d.tv.deviceID && tvIs.account == d.t.owner.fingerprint)
            #expect(laptopIs.authorization == .sameAccount && laptopIs.deviceID == d.t.owner.deviceID)
            #expect(laptop.id == tv.id && laptop.id.count == 16)
            #expect(laptop.peerDeviceID == d.tv.deviceID && tv.peerDeviceID == d.t.owner.deviceID)
            let expiry = UInt32(Date().timeIntervalSince1970 + 60)
            for n in 0..<3 {
                let request = laptop.seal(Array("play \(n)".utf8), kind: 7, expiry: expiry)
                #expect(try tv.open(request) == SealedMessage(kind: 7, counter: UInt64(n), plaintext: Array("play \(n)".utf8)))
                let response = tv.seal(Array("ok \(n)".utf8), kind: 8, expiry: expiry)
                #expect(try laptop.open(response) == SealedMessage(kind: 8, counter: UInt64(n), plaintext: Array("ok \(n)".utf8)))
            }
            // What a side sealed, it cannot open itself: each direction has its own key.
            var again = laptop
            #expect(sealError { try again.open(laptop.seal([1, 2, 3], kind: 1, expiry: expiry)) } == .forged)
        }
    }

    @Test func peekReadsTheClaimWithoutTrustingIt() throws {
        try SealDevices.with { d in
            let initiator = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID.uppercased())
            let claim = try #require(SealResponder.peek(initiator.hello))
            #expect(claim.sender == d.t.owner.deviceID && claim.receiver == d.tv.deviceID && claim.sessionID == initiator.sessionID)
            #expect(SealResponder.peek(Array(initiator.hello.dropLast())) == nil)
        }
    }

    @Test func aForgedSignatureIsForgedOnEitherSide() throws {
        try SealDevices.with { d in
            let initiator = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            // The signature's last byte, then a signed field (the ephemeral key's last byte).
            var badSignature = initiator.hello
            badSignature[badSignature.count - 1] ^= 1
            #expect(sealError { try SealResponder.respond(to: badSignature, credentials: try d.tvSeal, trust: try d.tvStore.trust) } == .forged)
            let message = try SealHandshake.Message.read(initiator.hello)
            var swappedKey = initiator.hello
            swappedKey[message.body.count - 1 - message.chain.reduce(1) { $0 + 2 + $1.count }] ^= 1
            #expect(sealError { try SealResponder.respond(to: swappedKey, credentials: try d.tvSeal, trust: try d.tvStore.trust) } == .forged)
            // The reply's.
            let answer = try SealResponder.respond(to: initiator.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            var badReply = answer.reply
            badReply[badReply.count - 2] ^= 0x40
            #expect(sealError { try initiator.finish(reply: badReply, trustStore: try d.laptopStore, expecting: .ownAccount) } == .forged)
        }
    }

    @Test func anotherAccountsDeviceIsAnonymousToTheAgentAndRefusedByAClientExpectingItsOwn() throws {
        try SealDevices.with { d in
            // The stranger calls the TV: served as TLS would, anonymously, its account named.
            let call = SealInitiator(credentials: try d.stranger, to: d.tv.deviceID)
            let answer = try SealResponder.respond(to: call.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            #expect(answer.peer.authorization == .anonymous && answer.peer.deviceID == d.t.stranger.deviceID && answer.peer.account == d.t.stranger.fingerprint)
            // The laptop dials the stranger's device expecting its own account: refused.
            let dial = SealInitiator(credentials: try d.laptop, to: d.t.stranger.deviceID)
            let theirs = try SealResponder.respond(to: dial.hello, credentials: try d.stranger, trust: try d.strangerStore.trust)
            let ours = d.t.owner.fingerprint.short, stranger = d.t.stranger.fingerprint.short
            #expect(sealError { try dial.finish(reply: theirs.reply, trustStore: try d.laptopStore, expecting: .ownAccount) }
                    == .refused("the agent's certificate belongs to another account (fingerprint \(stranger)…), not this one (\(ours)…)"))
            // Expecting that account (as its advertisement said), it is an anonymous peer.
            let (_, agent) = try dial.finish(reply: theirs.reply, trustStore: try d.laptopStore, expecting: .account(d.t.stranger.fingerprint))
            #expect(agent.authorization == .anonymous && agent.account == d.t.stranger.fingerprint)
        }
    }

    @Test func aSelfSignedCertificateClaimingOurTVIsNeverOurTV() throws {
        try SealDevices.with { d in
            let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
            let impostor = try SealCredentials(deviceID: d.tv.deviceID, key: key, chain: [der(selfSignedDevice(id: d.tv.deviceID, key: key))])
            // Calling the laptop: anonymous with no account, as over TLS.
            let call = SealInitiator(credentials: impostor, to: d.t.owner.deviceID)
            let answer = try SealResponder.respond(to: call.hello, credentials: try d.laptop, trust: try d.laptopStore.trust)
            #expect(answer.peer == PeerIdentity(authorization: .anonymous, deviceID: d.tv.deviceID, account: nil, publicKey: key.publicKey))
            // Answering the laptop's hello to the TV: refused.
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            let fake = try SealResponder.respond(to: dial.hello, credentials: impostor, trust: try d.tvStore.trust)
            #expect(sealError { try dial.finish(reply: fake.reply, trustStore: try d.laptopStore, expecting: .ownAccount) }
                    == .refused("the agent's certificate was not issued by this account (\(d.t.owner.fingerprint.short)…), nor by any account it presented"))
        }
    }

    @Test func aRevokedDeviceIsRefusedCallingOrAnswering() throws {
        try SealDevices.with { d in
            _ = try d.t.owner.revoke("TV", in: d.t.home)
            let call = SealInitiator(credentials: try d.tvSeal, to: d.t.owner.deviceID)
            #expect(sealError { try SealResponder.respond(to: call.hello, credentials: try d.laptop, trust: try d.laptopStore.trust) }
                    == .refused("the peer's device ID \(d.tv.deviceID) is revoked by this account"))
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            // The TV has not heard of its revocation: it answers.
            let answer = try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            #expect(sealError { try dial.finish(reply: answer.reply, trustStore: try d.laptopStore, expecting: .ownAccount) }
                    == .refused("the agent's device ID \(d.tv.deviceID) is revoked by this account"))
        }
    }

    @Test func aReplyFromAnotherDeviceOfTheAccountThanTheOneDialledIsRefused() throws {
        try SealDevices.with { d in
            // The speaker, a device of the account, answers (signs) the laptop's hello to the TV.
            let speaker = try d.t.owner.exportDevice(named: "Speaker", in: d.t.home)
            let speakerSeal = try SealCredentials(deviceID: speaker.deviceID, key: speaker.key, chain: [der(speaker.certificate), der(speaker.accountCertificate)])
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            // A speaker's respond() will not answer a hello for another device.
            #expect(sealError { try SealResponder.respond(to: dial.hello, credentials: speakerSeal, trust: try d.tvStore.trust) } == .wrongReceiver)
            // One made by hand, bound to this hello, is refused for the device it is.
            var (reply, _) = SealHandshake.make(kind: SealHandshake.replyKind, sessionID: dial.sessionID, from: speakerSeal,
                                                to: d.t.owner.deviceID, helloHash: SealHandshake.hash(dial.hello), now: Date())
            let replyBytes = reply.signed(with: speaker.key)
            #expect(sealError { try dial.finish(reply: replyBytes, trustStore: try d.laptopStore, expecting: .ownAccount) }
                    == .refused("the agent presented device \(speaker.deviceID), not the expected \(d.tv.deviceID)"))
            // And the TV's real certificate with a reply that names the speaker: refused too.
            let lying = try SealCredentials(deviceID: speaker.deviceID, key: d.tv.key, chain: d.tvSeal.chain)
            var (claim, _) = SealHandshake.make(kind: SealHandshake.replyKind, sessionID: dial.sessionID, from: lying,
                                                to: d.t.owner.deviceID, helloHash: SealHandshake.hash(dial.hello), now: Date())
            let claimBytes = claim.signed(with: d.tv.key)
            #expect(sealError { try dial.finish(reply: claimBytes, trustStore: try d.laptopStore, expecting: .ownAccount) }
                    == .refused("the agent's reply names device \(speaker.deviceID), but its certificate names \(d.tv.deviceID)"))
        }
    }

    @Test func aHelloWhoseSenderIsNotItsCertificatesDeviceIsRefused() throws {
        try SealDevices.with { d in
            let other = UUID().uuidString.lowercased()
            let lying = try SealCredentials(deviceID: other, key: d.t.owner.key, chain: d.laptop.chain)
            let call = SealInitiator(credentials: lying, to: d.tv.deviceID)
            #expect(sealError { try SealResponder.respond(to: call.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust) }
                    == .refused("the caller's hello names device \(other), but its certificate names \(d.t.owner.deviceID)"))
        }
    }

    @Test func aHelloOrReplyForAnotherDeviceOrSessionIsRefused() throws {
        try SealDevices.with { d in
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            #expect(sealError { try SealResponder.respond(to: dial.hello, credentials: try d.stranger, trust: try d.strangerStore.trust) } == .wrongReceiver)
            // The TV's reply to another hello of the laptop's.
            let other = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            let answer = try SealResponder.respond(to: other.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            #expect(sealError { try dial.finish(reply: answer.reply, trustStore: try d.laptopStore, expecting: .ownAccount) } == .wrongSession)
            // A hello where a reply belongs, and a reply where a hello does.
            #expect(sealError { try dial.finish(reply: dial.hello, trustStore: try d.laptopStore, expecting: .ownAccount) } == .malformed("a hello where a reply was expected"))
            #expect(sealError { try SealResponder.respond(to: answer.reply, credentials: try d.laptop, trust: try d.laptopStore.trust) } == .malformed("a reply where a hello was expected"))
        }
    }

    @Test func aHelloTooOldOrFromTheFutureIsRefused() throws {
        try SealDevices.with { d in
            let made = Date()
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID, now: made)
            func respond(at now: Date) -> SealError? {
                sealError { try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust, now: now) }
            }
            #expect(respond(at: made + 59) == nil)
            #expect(respond(at: made + 62) == .expired)
            #expect(respond(at: made - 62) == .notYetValid)
            // A reply that sat too long is refused by the initiator as well.
            let answer = try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust, now: made)
            #expect(sealError { try dial.finish(reply: answer.reply, trustStore: try d.laptopStore, expecting: .ownAccount, now: made + 200) } == .expired)
        }
    }

    @Test func aReplayedHelloGivesTheReplayerNothingAndTheCacheSpotsIt() throws {
        try SealDevices.with { d in
            var (laptop, _, _, _) = try d.laptopDialsTV()
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            let first = try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            var replayed = try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            // A second session with a fresh agent key: what it seals, the first session cannot open.
            #expect(first.reply != replayed.reply)
            var (session, _) = try dial.finish(reply: first.reply, trustStore: try d.laptopStore, expecting: .ownAccount)
            #expect(sealError { try session.open(replayed.session.seal([1], kind: 1, expiry: .max)) } == .forged)
            #expect(sealError { try laptop.open(replayed.session.seal([1], kind: 1, expiry: .max)) } == .forged)
            let seen = SealSeenHellos()
            #expect(seen.isNew(dial.sessionID))
            #expect(!seen.isNew(dial.sessionID))
            #expect(seen.isNew(dial.sessionID, now: Date() + 200))
        }
    }

    @Test func truncatedOrGarbageHandshakesAreMalformedNeverACrash() throws {
        try SealDevices.with { d in
            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            let answer = try SealResponder.respond(to: dial.hello, credentials: try d.tvSeal, trust: try d.tvStore.trust)
            let tvSeal = try d.tvSeal, trust = try d.tvStore.trust, store = try d.laptopStore
            for length in 0..<dial.hello.count {
                let cut = Array(dial.hello.prefix(length))
                guard case .malformed = sealError({ try SealResponder.respond(to: cut, credentials: tvSeal, trust: trust) }) else {
                    Issue.record("a hello cut to \(length) bytes was not malformed")
                    continue
                }
                #expect(SealResponder.peek(cut) == nil)
            }
            for length in 0..<answer.reply.count {
                guard case .malformed = sealError({ try dial.finish(reply: Array(answer.reply.prefix(length)), trustStore: store, expecting: .ownAccount) }) else {
                    Issue.record("a reply cut to \(length) bytes was not malformed")
                    continue
                }
            }
            #expect(sealError { try SealResponder.respond(to: dial.hello + [0], credentials: tvSeal, trust: trust) } == .malformed("bytes after the signature"))
            var generator = SystemRandomNumberGenerator()
            for length in 0..<600 {
                var garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if length > 2 { garbage[0] = 1; garbage[1] = SealHandshake.helloKind }
                #expect(sealError { try SealResponder.respond(to: garbage, credentials: tvSeal, trust: trust) } != nil)
                _ = SealResponder.peek(garbage)
            }
        }
    }
}
