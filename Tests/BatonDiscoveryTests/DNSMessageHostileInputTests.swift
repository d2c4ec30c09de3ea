import BatonDiscovery
import NIOCore
import Testing

/// Type IN and class IN, closing a question.
private let ptrIN: [UInt8] = [0x00, 0x0C, 0x00, 0x01]

/// A record's fixed fields after its name: `type`, class IN, TTL 120, and `rdlength`.
private func fixedFields(_ type: DNSRecordType, rdlength: UInt16) -> [UInt8] {
    [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), 0x00, 0x01, 0x00, 0x00, 0x00, 0x78,
     UInt8(rdlength >> 8), UInt8(rdlength & 0xFF)]
}

/// A packet holding one answer, owned by the root, of `type` with `rdata`, declaring `rdlength`.
private func oneRecord(_ type: DNSRecordType, rdlength: Int? = nil, _ rdata: [UInt8]) -> [UInt8] {
    header(an: 1) + [0x00] + fixedFields(type, rdlength: UInt16(rdlength ?? rdata.count)) + rdata
}

@Suite("DNS message hostile input")
struct DNSMessageHostileInputTests {
    @Test func pointerToItself() {
        // The question's name at offset 12 is a pointer to offset 12.
        #expect(throws: DNSParseError.pointerLoop) { try parse(header(qd: 1) + [0xC0, 0x0C] + ptrIN) }
        // So is a pointer back to the start of its own name, after a label.
        #expect(throws: DNSParseError.pointerLoop) { try parse(header(qd: 1) + [0x01, 0x61, 0xC0, 0x0C] + ptrIN) }
    }

    @Test func pointerLoopBetweenTwoNames() {
        // The first record's rdata (type 99, never read as a name) holds `a` + pointer to the
        // second record's name at 27, which is `b` + pointer to that rdata at 23.
        let packet = header(an: 2)
            + [0x00] + fixedFields(DNSRecordType(rawValue: 99), rdlength: 4)
            + [0x01, 0x61, 0xC0, 27]  // offset 23
            + [0x01, 0x62, 0xC0, 23]  // offset 27
            + fixedFields(.a, rdlength: 4) + [10, 0, 0, 1]
        #expect(throws: DNSParseError.pointerLoop) { try parse(packet) }
    }

    @Test func mutualPointersAreCaughtAtTheForwardOne() {
        // Two question names pointing at each other: the first one read points forward.
        let packet = header(qd: 2)
            + [0x01, 0x61, 0xC0, 20] + ptrIN  // offset 12
            + [0x01, 0x62, 0xC0, 12] + ptrIN  // offset 20
        #expect(throws: DNSParseError.pointerForward) { try parse(packet) }
    }

    @Test func forwardPointer() {
        let packet = header(qd: 1) + [0xC0, 0x12] + ptrIN + encodedName("local") + ptrIN
        #expect(throws: DNSParseError.pointerForward) { try parse(packet) }
        // Past the end of the packet is forward too.
        #expect(throws: DNSParseError.pointerForward) { try parse(header(qd: 1) + [0xFF, 0xFF] + ptrIN) }
    }

    @Test func tooManyPointersInOneName() throws {
        // Question 0 is the root; each later question's name is a pointer to the one before, so
        // question n follows n pointers.
        func chain(_ count: Int) -> [UInt8] {
            var packet = header(qd: UInt16(count)) + [0x00] + ptrIN
            var previous = 12
            for _ in 1..<count {
                let here = packet.count
                packet += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF)] + ptrIN
                previous = here
            }
            return packet
        }
        #expect(try parse(chain(DNSMessage.maxPointerJumps + 1)).questions.count == DNSMessage.maxPointerJumps + 1)
        #expect(throws: DNSParseError.tooManyPointers) { try parse(chain(DNSMessage.maxPointerJumps + 2)) }
    }

    @Test func reservedLabelLengthBits() {
        #expect(throws: DNSParseError.badLabelLength) { try parse(header(qd: 1) + [0x40, 0x61, 0x00] + ptrIN) }
        #expect(throws: DNSParseError.badLabelLength) { try parse(header(qd: 1) + [0x80, 0x61, 0x00] + ptrIN) }
    }

    @Test func nameOver255Bytes() {
        let label = String(repeating: "a", count: 63)
        // Five 63-byte labels: 321 bytes.
        let long = encodedName(label, label, label, label, label)
        #expect(throws: DNSParseError.nameTooLong) { try parse(header(qd: 1) + long + ptrIN) }
        // A name of exactly 255 bytes is fine; one more label in front, by compression, is not.
        let longest = encodedName(label, label, label, String(repeating: "d", count: 61))
        #expect(longest.count == 255)
        #expect(throws: Never.self) { try parse(header(qd: 1) + longest + ptrIN) }
        #expect(throws: DNSParseError.nameTooLong) {
            try parse(header(qd: 2) + longest + ptrIN + [0x01, 0x78, 0xC0, 0x0C] + ptrIN)
        }
    }

    @Test func truncatedHeader() {
        #expect(throws: DNSParseError.truncated) { try parse([]) }
        #expect(throws: DNSParseError.truncated) { try parse([0x00, 0x00, 0x84]) }
        #expect(throws: DNSParseError.truncated) { try parse([UInt8](repeating: 0, count: 11)) }
        #expect(throws: Never.self) { try parse([UInt8](repeating: 0, count: 12)) }
    }

    @Test func truncatedInTheMiddleOfARecord() {
        // 12 header + 10 name + 10 fixed + 4 rdata.
        let packet = header(an: 1) + encodedName("tv", "local") + fixedFields(.a, rdlength: 4) + [10, 0, 0, 1]
        #expect(packet.count == 36)
        #expect(throws: Never.self) { try parse(packet) }
        // Cut inside the fixed fields, and inside the rdata; from 23 bytes on, the count of one
        // record is plausible, so the cut itself is what is found.
        for length in 23..<packet.count {
            #expect(throws: DNSParseError.truncated, "cut at \(length)") { try parse(Array(packet[..<length])) }
        }
        // Cut inside a name.
        #expect(throws: DNSParseError.truncated) { try parse(header(qd: 1) + [0x05, 0x6C, 0x6F, 0x63, 0x61]) }
        #expect(throws: DNSParseError.truncated) { try parse(header(qd: 1) + [0x03, 0x61, 0x62, 0x63, 0xC0]) }
    }

    @Test func sectionCountsThePacketCannotHold() {
        var packet = header(qd: 0xFFFF)
        packet += [UInt8](repeating: 0, count: 20 - packet.count)
        #expect(packet.count == 20)
        #expect(throws: DNSParseError.absurdCount) { try parse(packet) }
        #expect(throws: DNSParseError.absurdCount) { try parse(header(an: 0xFFFF, ns: 0xFFFF, ar: 0xFFFF)) }
        // Exactly enough room for the smallest entries is not absurd.
        #expect(throws: Never.self) { try parse(header(qd: 2) + [0x00] + ptrIN + [0x00] + ptrIN) }
        #expect(throws: DNSParseError.absurdCount) {
            try parse(header(qd: 2) + [0x00] + ptrIN + [0x00, 0x00, 0x0C, 0x00])
        }
    }

    @Test func rdlengthBeyondTheEnd() {
        #expect(throws: DNSParseError.truncated) { try parse(oneRecord(.a, rdlength: 0x0100, [10, 0, 0, 1])) }
        #expect(throws: DNSParseError.truncated) {
            try parse(oneRecord(DNSRecordType(rawValue: 99), rdlength: 0xFFFF, [UInt8](repeating: 0, count: 100)))
        }
    }

    @Test func srvWithRDLength3() {
        #expect(throws: DNSParseError.badRData(.srv)) { try parse(oneRecord(.srv, [0x00, 0x00, 0x00]) + [0, 0, 0, 0]) }
        // Numbers, then a name that does not end where the rdata does.
        #expect(throws: DNSParseError.badRData(.srv)) {
            try parse(oneRecord(.srv, rdlength: 7, [0, 0, 0, 0, 0x1B, 0x58] + encodedName("tv")))
        }
    }

    @Test func addressesOfTheWrongLength() {
        #expect(throws: DNSParseError.badRData(.a)) { try parse(oneRecord(.a, [10, 0, 0, 1, 0])) }
        #expect(throws: DNSParseError.badRData(.a)) { try parse(oneRecord(.a, [10, 0, 0])) }
        #expect(throws: DNSParseError.badRData(.aaaa)) { try parse(oneRecord(.aaaa, [UInt8](repeating: 0, count: 15))) }
        #expect(throws: DNSParseError.badRData(.aaaa)) { try parse(oneRecord(.aaaa, [UInt8](repeating: 0, count: 17))) }
    }

    @Test func namesInRDataMustFillItExactly() {
        // The name is 1 byte of 3.
        #expect(throws: DNSParseError.badRData(.ptr)) { try parse(oneRecord(.ptr, [0x00, 0x00, 0x00])) }
        // The name runs past the rdata's 2 bytes (into following padding).
        #expect(throws: DNSParseError.badRData(.ptr)) { try parse(oneRecord(.ptr, rdlength: 2, encodedName("tv"))) }
        // An empty PTR has no name at all.
        #expect(throws: DNSParseError.badRData(.ptr)) { try parse(oneRecord(.ptr, []) + [0x00]) }
        #expect(throws: DNSParseError.badRData(.nsec)) { try parse(oneRecord(.nsec, rdlength: 2, encodedName("tv"))) }
    }

    @Test func txtStringRunningPastTheRData() {
        #expect(throws: DNSParseError.badRData(.txt)) {
            try parse(oneRecord(.txt, rdlength: 3, ascii("\u{5}v=1") + ascii("pad")))
        }
        #expect(throws: Never.self) { try parse(oneRecord(.txt, ascii("\u{3}v=1"))) }
    }

    @Test func malformedNSECBitmaps() {
        // Window 0 with a zero-length bitmap.
        #expect(throws: DNSParseError.badRData(.nsec)) { try parse(oneRecord(.nsec, [0x00, 0x00, 0x00])) }
        // Bitmap longer than 32 bytes.
        #expect(throws: DNSParseError.badRData(.nsec)) {
            try parse(oneRecord(.nsec, [0x00, 0x00, 33] + [UInt8](repeating: 0xFF, count: 33)))
        }
        // Windows out of order.
        #expect(throws: DNSParseError.badRData(.nsec)) {
            try parse(oneRecord(.nsec, [0x00, 0x01, 0x01, 0x40, 0x00, 0x01, 0x40]))
        }
        // A bitmap running past the rdata, and a lone window byte.
        #expect(throws: DNSParseError.badRData(.nsec)) { try parse(oneRecord(.nsec, [0x00, 0x00, 0x04, 0x40])) }
        #expect(throws: DNSParseError.badRData(.nsec)) { try parse(oneRecord(.nsec, [0x00, 0x00])) }
    }

    @Test func trailingGarbageIsNotAnError() throws {
        let packet = bytes(of: everyTypeResponse().serialized()) + [0xC0, 0x00, 0xFF, 0x40]
        #expect(try parse(packet) == everyTypeResponse())
    }
}
