import NIOCore

/// Writes names into one message, replacing a suffix already written with a pointer to it
/// (RFC 1035 §4.1.4).
///
/// Suffixes match byte for byte, case included, so a reader sees every name in the case it was
/// written. Only suffixes that start within the first 16 KiB of the message can be pointed to:
/// a pointer has 14 bits.
struct DNSNameCompressor {
    /// Where the message's header starts in the buffer; pointers count from there.
    private let messageStart: Int
    /// Whether to compress at all; when not, names go out whole.
    private let enabled: Bool
    /// Each suffix written so far (as a slice of its name's storage, so no copies), and its
    /// offset in the message.
    private var offsets: [ArraySlice<UInt8>: UInt16] = [:]

    /// A compressor for the message whose header starts at `messageStart` in the buffer; with
    /// `enabled` false it writes every name whole (for rdata on its own).
    init(messageStart: Int, enabled: Bool = true) {
        self.messageStart = messageStart
        self.enabled = enabled
    }

    /// Appends `name`, compressed if an earlier one in the message ends the same way.
    mutating func write(_ name: DNSName, into buffer: inout ByteBuffer) {
        let storage = name.storage
        guard enabled else {
            buffer.writeBytes(storage)
            buffer.writeInteger(UInt8(0))
            return
        }
        let start = buffer.writerIndex - messageStart
        var offset = 0
        while offset < storage.count {
            if let target = offsets[storage[offset...]] {
                buffer.writeBytes(storage[..<offset])
                buffer.writeInteger(0xC000 | target)
                remember(storage, before: offset, writtenAt: start)
                return
            }
            offset += 1 + Int(storage[offset])
        }
        buffer.writeBytes(storage)
        buffer.writeInteger(UInt8(0))
        remember(storage, before: storage.count, writtenAt: start)
    }

    /// Records the suffixes of `storage` starting before `end`, which were just written starting
    /// at message offset `start`.
    private mutating func remember(_ storage: [UInt8], before end: Int, writtenAt start: Int) {
        var offset = 0
        while offset < end {
            let position = start + offset
            guard position < 0x4000 else { return }
            offsets[storage[offset...]] = UInt16(position)
            offset += 1 + Int(storage[offset])
        }
    }
}
