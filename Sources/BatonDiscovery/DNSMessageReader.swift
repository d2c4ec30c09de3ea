/// Reads one DNS message from bytes that came off the network, trusting nothing in them.
///
/// Every read is bounds-checked against the packet, every loop is bounded by the bytes it
/// consumes or by ``DNSMessage/maxPointerJumps``, and nothing is allocated from a count before
/// the packet is known to be big enough for it.
struct DNSMessageReader {
    /// The whole message, header first; compression pointers are offsets into it.
    private let bytes: UnsafeRawBufferPointer
    /// The next byte to read.
    private var position = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Reads the header and all four sections; what follows them is ignored.
    mutating func readMessage() throws(DNSParseError) -> DNSMessage {
        let id = try readUInt16()
        let flags = try readUInt16()
        let questionCount = Int(try readUInt16())
        let answerCount = Int(try readUInt16())
        let authorityCount = Int(try readUInt16())
        let additionalCount = Int(try readUInt16())
        // The smallest question is a root name and type and class (5 bytes); the smallest record
        // adds a TTL and an rdata length (11 bytes).
        guard questionCount * 5 + (answerCount + authorityCount + additionalCount) * 11 <= bytes.count - position
        else { throw .absurdCount }

        var questions: [DNSQuestion] = []
        questions.reserveCapacity(questionCount)
        for _ in 0..<questionCount {
            questions.append(try readQuestion())
        }
        return DNSMessage(
            id: id, flags: flags, questions: questions,
            answers: try readRecords(answerCount),
            authorities: try readRecords(authorityCount),
            additionals: try readRecords(additionalCount))
    }

    private mutating func readQuestion() throws(DNSParseError) -> DNSQuestion {
        let name = try readName()
        let type = try readUInt16()
        let classField = try readUInt16()
        return DNSQuestion(
            name: name, type: DNSRecordType(rawValue: type), recordClass: DNSClass(rawValue: classField),
            unicastResponse: classField & 0x8000 != 0)
    }

    private mutating func readRecords(_ count: Int) throws(DNSParseError) -> [DNSResourceRecord] {
        var records: [DNSResourceRecord] = []
        records.reserveCapacity(count)
        for _ in 0..<count {
            records.append(try readRecord())
        }
        return records
    }

    private mutating func readRecord() throws(DNSParseError) -> DNSResourceRecord {
        let name = try readName()
        let type = DNSRecordType(rawValue: try readUInt16())
        let classField = try readUInt16()
        let ttl = try readUInt32()
        let length = Int(try readUInt16())
        guard length <= bytes.count - position else { throw .truncated }
        let end = position + length
        let data = try readRData(type, end: end)
        position = end
        return DNSResourceRecord(
            name: name, recordClass: DNSClass(rawValue: classField), cacheFlush: classField & 0x8000 != 0,
            ttl: ttl, data: data)
    }

    /// Reads rdata of `type` from `position`, which must take exactly the bytes up to `end`.
    private mutating func readRData(_ type: DNSRecordType, end: Int) throws(DNSParseError) -> DNSRecordData {
        let length = end - position
        switch type {
        case .a:
            guard length == 4 else { throw .badRData(type) }
            return .a(readBytes(4))
        case .aaaa:
            guard length == 16 else { throw .badRData(type) }
            return .aaaa(readBytes(16))
        case .ptr:
            let name = try readName()
            guard position == end else { throw .badRData(type) }
            return .ptr(name)
        case .srv:
            // Three 16-bit numbers and at least the root name.
            guard length >= 7 else { throw .badRData(type) }
            let priority = try readUInt16()
            let weight = try readUInt16()
            let port = try readUInt16()
            let target = try readName()
            guard position == end else { throw .badRData(type) }
            return .srv(priority: priority, weight: weight, port: port, target: target)
        case .txt:
            var strings: [[UInt8]] = []
            while position < end {
                let stringLength = Int(bytes[position])
                guard stringLength < end - position else { throw .badRData(type) }
                position += 1
                strings.append(readBytes(stringLength))
            }
            return .txt(strings)
        case .nsec:
            let next = try readName()
            guard position <= end,
                  let types = DNSRecordData.parseTypeBitmaps(UnsafeRawBufferPointer(rebasing: bytes[position..<end]))
            else { throw .badRData(type) }
            return .nsec(next: next, types: types)
        default:
            return .unknown(type: type, bytes: readBytes(length))
        }
    }

    /// Reads a possibly compressed name, leaving `position` after it: after its zero byte or its
    /// first pointer.
    ///
    /// Each pointer must point strictly before the start of the name or of the previous
    /// pointer's target. Offsets then only ever go down, so no packet can make this loop; the
    /// jump limit bounds the work on top.
    private mutating func readName() throws(DNSParseError) -> DNSName {
        let nameStart = position
        var cursor = position
        var segmentStart = position  // where the bytes now being read were reached from
        var resumeAt: Int? = nil  // where the message continues, once a pointer is taken
        var jumps = 0
        var storage: [UInt8] = []

        while true {
            guard cursor < bytes.count else { throw .truncated }
            let lengthByte = bytes[cursor]
            switch lengthByte & 0xC0 {
            case 0x00:
                let length = Int(lengthByte)
                if length == 0 {
                    position = resumeAt ?? cursor + 1
                    return DNSName(uncheckedStorage: storage)
                }
                guard length < bytes.count - cursor else { throw .truncated }
                // The root's zero byte makes the name one byte longer than its storage.
                guard storage.count + 1 + length < DNSName.maxWireLength else { throw .nameTooLong }
                storage.append(lengthByte)
                storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[cursor + 1..<cursor + 1 + length]))
                cursor += 1 + length
            case 0xC0:
                guard cursor + 1 < bytes.count else { throw .truncated }
                let target = Int(lengthByte & 0x3F) << 8 | Int(bytes[cursor + 1])
                guard target < segmentStart else {
                    throw classifyBadPointer(nameStart: nameStart, target: target)
                }
                jumps += 1
                guard jumps <= DNSMessage.maxPointerJumps else { throw .tooManyPointers }
                if resumeAt == nil { resumeAt = cursor + 2 }
                segmentStart = target
                cursor = target
            default:
                throw .badLabelLength
            }
        }
    }

    /// Says whether the first pointer in the name at `nameStart` that does not go strictly
    /// backwards, whose target is `target`, points into bytes this name already read (a loop)
    /// or past them (forward). Walks the name again, so reading valid names costs nothing extra.
    private func classifyBadPointer(nameStart: Int, target: Int) -> DNSParseError {
        var cursor = nameStart
        var segmentStart = nameStart
        // readName already checked every byte up to the bad pointer, and stopped there.
        while true {
            let lengthByte = bytes[cursor]
            if lengthByte & 0xC0 == 0 {
                cursor += 1 + Int(lengthByte)
                continue
            }
            // Segment [segmentStart, cursor + 2) has been read, pointer included.
            if (segmentStart..<cursor + 2).contains(target) { return .pointerLoop }
            let next = Int(lengthByte & 0x3F) << 8 | Int(bytes[cursor + 1])
            if next >= segmentStart { return .pointerForward }
            segmentStart = next
            cursor = next
        }
    }

    // MARK: - Primitives

    private mutating func readUInt16() throws(DNSParseError) -> UInt16 {
        guard bytes.count - position >= 2 else { throw .truncated }
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    private mutating func readUInt32() throws(DNSParseError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw .truncated }
        defer { position += 4 }
        return UInt32(bytes[position]) << 24 | UInt32(bytes[position + 1]) << 16
            | UInt32(bytes[position + 2]) << 8 | UInt32(bytes[position + 3])
    }

    /// `count` bytes the caller has already checked are there.
    private mutating func readBytes(_ count: Int) -> [UInt8] {
        defer { position += count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[position..<position + count]))
    }
}
