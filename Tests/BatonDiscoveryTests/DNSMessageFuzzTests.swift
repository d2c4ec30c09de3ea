import BatonDiscovery
import NIOCore
import Testing

@Suite("DNS message fuzzing")
struct DNSMessageFuzzTests {
    /// Parses `packet`; if that works, the message must serialize and parse back to itself.
    /// Returns whether it parsed. A crash or hang here is the failure being looked for.
    private func check(_ packet: [UInt8]) -> Bool {
        let message: DNSMessage
        do {
            message = try parse(packet)
        } catch {
            // Typed throws: whatever failed is a DNSParseError by construction.
            return false
        }
        let again = try? DNSMessage(parsing: message.serialized())
        #expect(again == message, "re-serializing a parsed message changed it: \(packet)")
        return true
    }

    @Test func mutatedPacketsParseOrThrowButNeverCrash() {
        let valid = bytes(of: everyTypeResponse().serialized())
        var random = SplitMix64(seed: 0xBA70_D15C)
        var parsed = 0
        for _ in 0..<10_000 {
            var packet = valid
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<packet.count, using: &random)
                // Sometimes a byte that matters to the parser: a pointer or length, a 0, a 0xFF.
                switch Int.random(in: 0..<4, using: &random) {
                case 0: packet[index] = 0xC0
                case 1: packet[index] = 0
                case 2: packet[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
                default: packet[index] = UInt8.random(in: 0...255, using: &random)
                }
            }
            if Int.random(in: 0..<8, using: &random) == 0 {
                packet.removeLast(Int.random(in: 0..<packet.count, using: &random))
            }
            if check(packet) { parsed += 1 }
        }
        // Some mutations (TTLs, ports, address bytes) leave a valid packet: make sure the run
        // exercised both outcomes.
        #expect(parsed > 100)
        #expect(parsed < 10_000)
    }

    @Test func everyPrefixOfAValidPacketParsesOrThrows() {
        let valid = bytes(of: everyTypeResponse().serialized())
        for length in 0..<valid.count {
            #expect(!check(Array(valid[..<length])), "a prefix of \(length) bytes parsed")
        }
        #expect(check(valid))
    }

    @Test func randomBytesAfterAPlausibleHeaderParseOrThrow() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let count = Int.random(in: 0..<300, using: &random)
            var packet = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            if packet.count >= 12 {
                // Small counts, so the parser gets past the header to the names and records.
                for i in stride(from: 4, to: 12, by: 2) {
                    packet[i] = 0
                    packet[i + 1] = UInt8.random(in: 0...3, using: &random)
                }
            }
            _ = check(packet)
        }
    }
}
