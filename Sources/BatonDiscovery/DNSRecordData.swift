import NIOCore

/// The RDATA of a resource record, typed for the record types DNS-SD uses.
///
/// Equality compares the data as DNS does: names inside it ignore ASCII case, NSEC type sets
/// ignore order. The case of a record's ``DNSRecordType`` follows from which case this is.
public enum DNSRecordData: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 address, exactly 4 bytes in network order; other lengths are a programming error
    /// and trap when serialized.
    case a([UInt8])
    /// An IPv6 address, exactly 16 bytes in network order; other lengths trap when serialized.
    case aaaa([UInt8])
    /// A pointer to another name (DNS-SD: a service type's instance).
    case ptr(DNSName)
    /// Where a service is: the host `target` and its `port` (RFC 2782). DNS-SD sets priority and
    /// weight to 0.
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    /// Character strings, each at most 255 bytes (longer ones trap when serialized). Written as
    /// given: build DNS-SD attributes with ``txt(entries:)``, which never leaves this empty.
    case txt([[UInt8]])
    /// The next name and the types that exist at the owner name (RFC 4034 §4.1); mDNS sets
    /// `next` to the owner name itself (RFC 6762 §6.1).
    case nsec(next: DNSName, types: Set<DNSRecordType>)
    /// Data of a type this codec does not parse, kept as bytes. The parser never uses this for
    /// the types above.
    case unknown(type: DNSRecordType, bytes: [UInt8])

    /// The record type this data belongs to.
    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ptr: .ptr
        case .srv: .srv
        case .txt: .txt
        case .nsec: .nsec
        case .unknown(let type, _): type
        }
    }

    /// The wire form with no name compression, as RFC 6762 §8.2 compares it.
    public var uncompressedBytes: [UInt8] {
        var buffer = ByteBuffer()
        var plain = DNSNameCompressor(messageStart: 0, enabled: false)
        write(into: &buffer, names: &plain)
        return Array(buffer.readableBytesView)
    }

    /// Appends the wire form, names through `names` (compressed only where mDNS allows it: PTR,
    /// SRV target, NSEC next name; RFC 6762 §18.14).
    func write(into buffer: inout ByteBuffer, names: inout DNSNameCompressor) {
        switch self {
        case .a(let address):
            precondition(address.count == 4, "an A record's address is 4 bytes, not \(address.count)")
            buffer.writeBytes(address)
        case .aaaa(let address):
            precondition(address.count == 16, "an AAAA record's address is 16 bytes, not \(address.count)")
            buffer.writeBytes(address)
        case .ptr(let name):
            names.write(name, into: &buffer)
        case .srv(let priority, let weight, let port, let target):
            buffer.writeInteger(priority)
            buffer.writeInteger(weight)
            buffer.writeInteger(port)
            names.write(target, into: &buffer)
        case .txt(let strings):
            for string in strings {
                precondition(string.count <= 255, "a TXT string is at most 255 bytes, not \(string.count)")
                buffer.writeInteger(UInt8(string.count))
                buffer.writeBytes(string)
            }
        case .nsec(let next, let types):
            names.write(next, into: &buffer)
            Self.writeTypeBitmaps(types, into: &buffer)
        case .unknown(_, let bytes):
            buffer.writeBytes(bytes)
        }
    }

    /// RFC 4034 §4.1.2: for each 256-type window in use, in order, the window number, the bitmap
    /// length, and a bitmap trimmed after its last non-zero byte.
    private static func writeTypeBitmaps(_ types: Set<DNSRecordType>, into buffer: inout ByteBuffer) {
        let values = types.map(\.rawValue).sorted()
        var index = 0
        var bitmap = [UInt8](repeating: 0, count: 32)
        while index < values.count {
            let window = values[index] >> 8
            var length = 0
            for i in bitmap.indices { bitmap[i] = 0 }
            while index < values.count, values[index] >> 8 == window {
                let low = Int(values[index] & 0xFF)
                bitmap[low >> 3] |= 0x80 >> UInt8(low & 7)
                length = (low >> 3) + 1
                index += 1
            }
            buffer.writeInteger(UInt8(window))
            buffer.writeInteger(UInt8(length))
            buffer.writeBytes(bitmap[..<length])
        }
    }

    /// Reads RFC 4034 §4.1.2 type bitmaps filling `bytes`; nil if they are malformed (a window
    /// out of order or repeated, a length outside 1 ... 32, a bitmap running past the end).
    static func parseTypeBitmaps(_ bytes: UnsafeRawBufferPointer) -> Set<DNSRecordType>? {
        var types = Set<DNSRecordType>()
        var position = 0
        var previousWindow = -1
        while position < bytes.count {
            guard bytes.count - position >= 2 else { return nil }
            let window = Int(bytes[position])
            let length = Int(bytes[position + 1])
            guard window > previousWindow, (1...32).contains(length), bytes.count - position - 2 >= length else {
                return nil
            }
            for i in 0..<length {
                let byte = bytes[position + 2 + i]
                guard byte != 0 else { continue }
                for bit in 0..<8 where byte & (0x80 >> UInt8(bit)) != 0 {
                    types.insert(DNSRecordType(rawValue: UInt16(window << 8 | i << 3 | bit)))
                }
            }
            previousWindow = window
            position += 2 + length
        }
        return types
    }

    /// Presentation form for logs: `192.168.1.20`, `fe80:0:0:0:1:2:3:4`, `0 0 7000 host.local.`,
    /// `"a=1" "b"`.
    public var description: String {
        switch self {
        case .a(let address):
            return address.map { String($0) }.joined(separator: ".")
        case .aaaa(let address):
            var groups: [String] = []
            var i = 0
            while i + 1 < address.count {
                groups.append(String(UInt16(address[i]) << 8 | UInt16(address[i + 1]), radix: 16))
                i += 2
            }
            return groups.joined(separator: ":")
        case .ptr(let name):
            return name.description
        case .srv(let priority, let weight, let port, let target):
            return "\(priority) \(weight) \(port) \(target)"
        case .txt(let strings):
            return strings.map { "\"\(String(decoding: $0, as: UTF8.self))\"" }.joined(separator: " ")
        case .nsec(let next, let types):
            return ([next.description] + types.sorted().map(\.description)).joined(separator: " ")
        case .unknown(_, let bytes):
            // RFC 3597 §5's generic form.
            return "\\# \(bytes.count) " + bytes.map { byte in
                let hex = String(byte, radix: 16)
                return byte < 16 ? "0" + hex : hex
            }.joined()
        }
    }
}

extension DNSRecordData {
    /// DNS-SD TXT data holding `entries` in order (RFC 6763 §6): `key=value`, or `key` alone for
    /// a boolean. A key repeated, in any case, is kept only the first time, since readers ignore
    /// later ones (§6.4). No entries gives the single empty string RFC 6763 §6.1 requires.
    public static func txt(entries: [DNSTXTEntry]) -> DNSRecordData {
        var strings: [[UInt8]] = []
        strings.reserveCapacity(max(entries.count, 1))
        var seenKeys = Set<String>()
        for entry in entries where seenKeys.insert(DNSTXTEntry.foldedKey(entry.key)).inserted {
            strings.append(entry.encoded)
        }
        if strings.isEmpty { strings.append([]) }
        return .txt(strings)
    }

    /// For TXT data, its DNS-SD entries in order (RFC 6763 §6.4): the first occurrence of each
    /// key (compared case-insensitively) is kept and later ones dropped; empty strings and those
    /// with an empty or non-printable key are skipped. Nil for other types.
    public var txtEntries: [DNSTXTEntry]? {
        guard case .txt(let strings) = self else { return nil }
        var entries: [DNSTXTEntry] = []
        entries.reserveCapacity(strings.count)
        var seenKeys = Set<String>()
        for string in strings {
            guard let entry = DNSTXTEntry(encoded: string),
                  seenKeys.insert(DNSTXTEntry.foldedKey(entry.key)).inserted else { continue }
            entries.append(entry)
        }
        return entries
    }
}
