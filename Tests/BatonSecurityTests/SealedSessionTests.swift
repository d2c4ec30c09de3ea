@testable import BatonSecurity
import Foundation
import Testing

/// Messages in a sealed session: authenticated with everything they are bound to, opened once,
/// refused after their expiry; hostile bytes refused, never a crash.
@Suite("Sealed messages")
struct SealedSessionTests {
    let later = UInt32(Date().timeIntervalSince1970 + 600)

    @Test func everyTamperedByteIsForged() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let sealed = laptop.seal(Array(repeating: 0x61, count: 40), kind: 3, expiry: later)
            for index in sealed.indices {
                var tampered = sealed
                tampered[index] ^= 0x01
                // The version byte is read before anything; every other byte is authenticated.
                #expect(sealError { try tv.open(tampered) } == (index == 0 ? .malformed("version 0, not 1") : .forged), "byte \(index)")
            }
            // Untouched, it still opens: a refused message changes nothing.
            #expect(try tv.open(sealed).plaintext == Array(repeating: 0x61, count: 40))
        }
    }

    @Test func aMessageOpensOnceAndOutOfOrderWithinTheWindow() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let messages = (0..<6).map { laptop.seal([UInt8($0)], kind: 1, expiry: later) }
            #expect(try tv.open(messages[0]).counter == 0)
            #expect(sealError { try tv.open(messages[0]) } == .replayed(0))
            for n in [5, 3, 4, 1, 2] { #expect(try tv.open(messages[n]).plaintext == [UInt8(n)]) }
            for n in 0..<6 { #expect(sealError { try tv.open(messages[n]) } == .replayed(UInt64(n))) }
        }
    }

    @Test func aMessageOlderThanTheWindowIsRefusedEvenIfNeverOpened() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let messages = (0..<1100).map { _ in laptop.seal([], kind: 1, expiry: later) }
            #expect(try tv.open(messages[1099]).counter == 1099)
            #expect(sealError { try tv.open(messages[0]) } == .replayed(0))
            #expect(sealError { try tv.open(messages[75]) } == .replayed(75))  // 1024 behind
            #expect(try tv.open(messages[76]).counter == 76)                 // 1023 behind: in
            #expect(sealError { try tv.open(messages[76]) } == .replayed(76))
        }
    }

    @Test func anExpiredMessageIsRefused() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let now = Date()
            let sealed = laptop.seal([1], kind: 1, expiry: UInt32(now.timeIntervalSince1970) - 1)
            #expect(sealError { try tv.open(sealed, now: now) } == .expired)
            // Opened in time (a clock that was behind), it would have passed.
            #expect(try tv.open(sealed, now: now - 5).counter == 0)
        }
    }

    @Test func aMessageOfOneSessionIsForgedInAnother() throws {
        try SealDevices.with { d in
            var x = try d.laptopDialsTV()
            var y = try d.laptopDialsTV()
            let sealed = x.laptop.seal([1, 2, 3], kind: 1, expiry: later)
            #expect(sealError { try y.tv.open(sealed) } == .forged)
            #expect(try x.tv.open(sealed).plaintext == [1, 2, 3])
        }
    }

    @Test func theSessionIDSenderAndReceiverAreBoundEvenUnderTheSameKeys() throws {
        // Sessions sharing keys (which the handshake never makes): only the associated data
        // tells them apart, and it does.
        let keys = (i2r: [UInt8](repeating: 1, count: 32), r2i: [UInt8](repeating: 2, count: 32))
        let id = [UInt8](repeating: 9, count: 16), a = "a-device", b = "b-device"
        var sender = SealedSession(id: id, localDeviceID: a, peerDeviceID: b, keys: keys, isInitiator: true)
        let sealed = sender.seal([1, 2, 3], kind: 4, expiry: later)
        for (otherID, local, peer) in [([UInt8](repeating: 8, count: 16), b, a), (id, b, "c-device"), (id, "c-device", a)] {
            var receiver = SealedSession(id: otherID, localDeviceID: local, peerDeviceID: peer, keys: keys, isInitiator: false)
            #expect(sealError { try receiver.open(sealed) } == .forged, "\(local) from \(peer)")
        }
        var receiver = SealedSession(id: id, localDeviceID: b, peerDeviceID: a, keys: keys, isInitiator: false)
        #expect(try receiver.open(sealed) == SealedMessage(kind: 4, counter: 0, plaintext: [1, 2, 3]))
    }

    @Test func truncatedOrGarbageMessagesAreRefusedNeverACrash() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let sealed = laptop.seal(Array(repeating: 7, count: 64), kind: 2, expiry: later)
            for length in 0..<sealed.count {
                let error = sealError { try tv.open(sealed.prefix(length)) }
                if length < 30 {
                    guard case .malformed = error else { Issue.record("\(length) bytes: \(String(describing: error))"); continue }
                } else {
                    #expect(error == .forged, "\(length) bytes")
                }
            }
            var generator = SystemRandomNumberGenerator()
            for length in 0..<400 {
                let garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                #expect(sealError { try tv.open(garbage) } != nil)
            }
            #expect(try tv.open(sealed).counter == 0)
        }
    }

    /// Not asserted: what sealing costs, for the report (see scripts/bench for timings).
    @Test func measureSealingCosts() throws {
        try SealDevices.with { d in
            var (laptop, tv, _, _) = try d.laptopDialsTV()
            let payload = [UInt8](repeating: 0x42, count: 200)
            let rounds = 2000
            var sealed: [[UInt8]] = []
            sealed.reserveCapacity(rounds)
            let clock = ContinuousClock()
            let sealTime = clock.measure { for _ in 0..<rounds { sealed.append(laptop.seal(payload, kind: 1, expiry: later)) } }
            var opened = 0
            let openTime = clock.measure { for message in sealed { if (try? tv.open(message)) != nil { opened += 1 } } }
            #expect(opened == rounds)
            let laptopSeal = try d.laptop, tvSeal = try d.tvSeal, trust = try d.tvStore.trust, store = try d.laptopStore
            let hellos = 50
            var helloTime = Duration.zero, respondTime = Duration.zero, finishTime = Duration.zero
            for _ in 0..<hellos {
                var initiator: SealInitiator?
                helloTime += clock.measure { initiator = SealInitiator(credentials: laptopSeal, to: d.tv.deviceID) }
                var reply: [UInt8] = []
                respondTime += clock.measure { reply = (try? SealResponder.respond(to: initiator!.hello, credentials: tvSeal, trust: trust))?.reply ?? [] }
                finishTime += clock.measure { #expect((try? initiator!.finish(reply: reply, trustStore: store, expecting: .ownAccount)) != nil) }
            }
            func micros(_ total: Duration, _ count: Int) -> String {
                String(format: "%.1f", Double(total.components.seconds) * 1e6 / Double(count) + Double(total.components.attoseconds) / 1e12 / Double(count))
            }
            print("seal measure: 200-byte message seal \(micros(sealTime, rounds)) µs, open \(micros(openTime, rounds)) µs; "
                  + "hello \(micros(helloTime, hellos)) µs, respond \(micros(respondTime, hellos)) µs, finish \(micros(finishTime, hellos)) µs "
                  + "(hello \(SealInitiator(credentials: laptopSeal, to: d.tv.deviceID).hello.count) bytes)")
        }
    }
}
