import BatonDiscovery
import NIOCore

/// The readable bytes of `buffer`.
func bytes(of buffer: ByteBuffer) -> [UInt8] {
    Array(buffer.readableBytesView)
}

/// Parses `bytes` as a DNS message.
func parse(_ bytes: [UInt8]) throws(DNSParseError) -> DNSMessage {
    try DNSMessage(parsing: ByteBuffer(bytes: bytes))
}

/// `text` as bytes, for writing packets out by hand.
func ascii(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

/// `name` encoded uncompressed by hand: each label's length then its bytes, then the root's 0.
func encodedName(_ labels: String...) -> [UInt8] {
    labels.flatMap { [UInt8($0.utf8.count)] + ascii($0) } + [0]
}

/// A 12-byte header with the given counts, ID 0 and flags `flags`.
func header(flags: UInt16 = 0, qd: UInt16 = 0, an: UInt16 = 0, ns: UInt16 = 0, ar: UInt16 = 0) -> [UInt8] {
    [0, 0, UInt8(flags >> 8), UInt8(flags & 0xFF)]
        + [qd, an, ns, ar].flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
}

/// A name that must parse.
func name(_ text: String) -> DNSName {
    guard let name = DNSName(text) else { fatalError("bad test name \(text)") }
    return name
}

/// A TXT entry that must be valid.
func entry(_ key: String, _ text: String? = nil) -> DNSTXTEntry {
    let entry = text.map { DNSTXTEntry(key: key, text: $0) } ?? DNSTXTEntry(key: key)
    guard let entry else { fatalError("bad test entry \(key)") }
    return entry
}

/// A response holding one record of every type the codec knows, plus one it does not, with
/// names that compress against each other.
func everyTypeResponse() -> DNSMessage {
    let service: DNSName = "_baton._tcp.local."
    let instance: DNSName = "Living Room TV (2)._baton._tcp.local."
    let host: DNSName = "living-room.local."
    return DNSMessage(
        isResponse: true, isAuthoritative: true,
        questions: [DNSQuestion(name: service, type: .ptr, unicastResponse: true)],
        answers: [
            DNSResourceRecord(name: service, ttl: 4500, data: .ptr(instance)),
        ],
        authorities: [
            DNSResourceRecord(
                name: host, ttl: 120, data: .unknown(type: DNSRecordType(rawValue: 99), bytes: [1, 2, 3])),
        ],
        additionals: [
            DNSResourceRecord(
                name: instance, cacheFlush: true, ttl: 120,
                data: .srv(priority: 0, weight: 0, port: 7_000, target: host)),
            DNSResourceRecord(
                name: instance, cacheFlush: true, ttl: 4500,
                data: .txt(entries: [entry("v", "1"), entry("name", "Wohnzimmer – Küche"), entry("secure")])),
            DNSResourceRecord(name: host, cacheFlush: true, ttl: 120, data: .a([192, 168, 1, 20])),
            DNSResourceRecord(
                name: host, cacheFlush: true, ttl: 120,
                data: .aaaa([0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0])),
            DNSResourceRecord(
                name: host, cacheFlush: true, ttl: 120,
                data: .nsec(next: host, types: [.a, .aaaa, DNSRecordType(rawValue: 0x1234)])),
        ])
}

/// `DNSName(text)` through the failable parser: with a literal argument, `DNSName("…")` would
/// be the trapping literal initializer instead (SE-0213).
func parsed(_ text: String) -> DNSName? {
    DNSName(text)
}
