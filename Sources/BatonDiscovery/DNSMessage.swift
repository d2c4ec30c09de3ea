import NIOCore

/// A DNS message (RFC 1035 §4.1) as mDNS sends it: a header, then questions, answers, authority
/// records and additional records.
///
/// ``serialize(into:)`` compresses names (RFC 1035 §4.1.4), in record data too where mDNS allows
/// it. ``init(parsing:)`` reads packets from anyone on the network: malformed ones throw
/// ``DNSParseError`` and never crash or hang.
public struct DNSMessage: Sendable, Hashable, CustomStringConvertible {
    /// The most compression pointers one name may follow when parsed. Real encoders need one
    /// per name (a name's suffix, once written, already ends in its own pointer or root).
    public static let maxPointerJumps = 64

    /// The message ID; mDNS multicast messages use 0 (RFC 6762 §18.1), and a unicast reply
    /// echoes the query's.
    public var id: UInt16
    /// The header's second 16-bit word, every bit as received: QR, opcode, AA, TC, RD, RA, Z,
    /// AD, CD, RCODE. The properties below read and set the bits mDNS uses.
    public var flags: UInt16
    /// The question section.
    public var questions: [DNSQuestion]
    /// The answer section; in an mDNS query, the known answers (RFC 6762 §7.1).
    public var answers: [DNSResourceRecord]
    /// The authority section; in an mDNS probe, the records being probed for (RFC 6762 §8.2).
    public var authorities: [DNSResourceRecord]
    /// The additional section.
    public var additionals: [DNSResourceRecord]

    /// A message with the given flag bits and sections, the other flag bits zero. mDNS responses
    /// set `isResponse` and `isAuthoritative` (RFC 6762 §18.2, §18.4).
    public init(
        id: UInt16 = 0, isResponse: Bool = false, isAuthoritative: Bool = false, isTruncated: Bool = false,
        questions: [DNSQuestion] = [], answers: [DNSResourceRecord] = [], authorities: [DNSResourceRecord] = [],
        additionals: [DNSResourceRecord] = []
    ) {
        self.init(
            id: id, flags: 0, questions: questions, answers: answers, authorities: authorities,
            additionals: additionals)
        self.isResponse = isResponse
        self.isAuthoritative = isAuthoritative
        self.isTruncated = isTruncated
    }

    init(
        id: UInt16, flags: UInt16, questions: [DNSQuestion], answers: [DNSResourceRecord],
        authorities: [DNSResourceRecord], additionals: [DNSResourceRecord]
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// Parses the readable bytes of `buffer` (leaving its reader index alone). Bytes after the
    /// last record are ignored, as mDNS packets may be padded; any size is accepted.
    ///
    /// - Throws: ``DNSParseError`` naming the first thing wrong.
    public init(parsing buffer: ByteBuffer) throws(DNSParseError) {
        // Read in place: the only copies made are the names and data the message keeps.
        let result = buffer.withUnsafeReadableBytes { bytes in
            Result { () throws(DNSParseError) -> DNSMessage in
                var reader = DNSMessageReader(bytes: bytes)
                return try reader.readMessage()
            }
        }
        self = try result.get()
    }

    // MARK: - Flags

    /// QR: a response, not a query.
    public var isResponse: Bool {
        get { flags & Self.responseBit != 0 }
        set { setFlag(Self.responseBit, newValue) }
    }

    /// AA: authoritative; set in every mDNS response (RFC 6762 §18.4).
    public var isAuthoritative: Bool {
        get { flags & Self.authoritativeBit != 0 }
        set { setFlag(Self.authoritativeBit, newValue) }
    }

    /// TC: in an mDNS query, more known answers follow in later packets (RFC 6762 §7.2); in an
    /// mDNS response it must be clear (§18.5).
    public var isTruncated: Bool {
        get { flags & Self.truncatedBit != 0 }
        set { setFlag(Self.truncatedBit, newValue) }
    }

    /// The 4-bit OPCODE; mDNS messages with any other than 0 are ignored (RFC 6762 §18.3).
    public var opcode: UInt8 { UInt8(truncatingIfNeeded: flags >> 11) & 0x0F }

    /// The 4-bit RCODE; mDNS messages with any other than 0 are ignored (RFC 6762 §18.11).
    public var responseCode: UInt8 { UInt8(truncatingIfNeeded: flags) & 0x0F }

    private static let responseBit: UInt16 = 0x8000
    private static let authoritativeBit: UInt16 = 0x0400
    private static let truncatedBit: UInt16 = 0x0200

    private mutating func setFlag(_ bit: UInt16, _ on: Bool) {
        flags = on ? flags | bit : flags & ~bit
    }

    // MARK: - Serializing

    /// Appends the message at the writer index of `buffer`, names compressed; compression
    /// pointers count from where the message starts, so the buffer may already hold other bytes.
    ///
    /// A section of more than 65535 entries, or one record's data over 65535 bytes, is a
    /// programming error and traps; so do the malformed data noted on ``DNSRecordData``'s cases.
    public func serialize(into buffer: inout ByteBuffer) {
        let sections = [questions.count, answers.count, authorities.count, additionals.count]
        precondition(sections.allSatisfy { $0 <= Int(UInt16.max) }, "a DNS section holds at most 65535 entries")
        var names = DNSNameCompressor(messageStart: buffer.writerIndex)
        buffer.writeInteger(id)
        buffer.writeInteger(flags)
        for count in sections {
            buffer.writeInteger(UInt16(count))
        }
        for question in questions {
            question.write(into: &buffer, names: &names)
        }
        for section in [answers, authorities, additionals] {
            for record in section {
                record.write(into: &buffer, names: &names)
            }
        }
    }

    /// The message on the wire, as ``serialize(into:)`` writes it.
    public func serialized() -> ByteBuffer {
        var buffer = ByteBuffer()
        serialize(into: &buffer)
        return buffer
    }

    /// A summary for logs: id, flags and every entry, one per line.
    public var description: String {
        var lines = ["id \(id) \(isResponse ? "response" : "query")"
            + (isAuthoritative ? " AA" : "") + (isTruncated ? " TC" : "")
            + (opcode != 0 ? " opcode \(opcode)" : "") + (responseCode != 0 ? " rcode \(responseCode)" : "")]
        lines += questions.map { "  question \($0)" }
        lines += answers.map { "  answer \($0)" }
        lines += authorities.map { "  authority \($0)" }
        lines += additionals.map { "  additional \($0)" }
        return lines.joined(separator: "\n")
    }
}
