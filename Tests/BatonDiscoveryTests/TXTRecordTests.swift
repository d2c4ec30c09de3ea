import BatonDiscovery
import NIOCore
import Testing

@Suite("DNS-SD TXT records")
struct TXTRecordTests {
    @Test func buildsKeyValueStringsInOrder() {
        let data = DNSRecordData.txt(entries: [
            entry("v", "1"), entry("name", "Living Room"), entry("secure"), entry("note", ""),
            DNSTXTEntry(key: "blob", value: [0x00, 0xFF, 0x3D])!,
        ])
        #expect(data == .txt([ascii("v=1"), ascii("name=Living Room"), ascii("secure"), ascii("note="),
                              ascii("blob=") + [0x00, 0xFF, 0x3D]]))
        #expect(data.uncompressedBytes == [3] + ascii("v=1") + [16] + ascii("name=Living Room") + [6] + ascii("secure")
            + [5] + ascii("note=") + [8] + ascii("blob=") + [0x00, 0xFF, 0x3D])
    }

    @Test func emptyTXTIsOneZeroLengthString() {
        let data = DNSRecordData.txt(entries: [])
        #expect(data == .txt([[]]))
        #expect(data.uncompressedBytes == [0])
        #expect(data.txtEntries == [])
    }

    @Test func buildingKeepsTheFirstOfKeysDifferingOnlyInCase() {
        let data = DNSRecordData.txt(entries: [
            entry("Path", "/a"), entry("v", "1"), entry("PATH", "/b"), entry("path"),
        ])
        #expect(data == .txt([ascii("Path=/a"), ascii("v=1")]))
    }

    @Test func parsesBooleansEmptyValuesAndDuplicates() throws {
        let data = DNSRecordData.txt([
            ascii("v=1"), ascii("secure"), ascii("note="), ascii("V=2"), ascii("eq=a=b"), [], ascii("=orphan"),
            ascii("secure=no"), [0x6B, 0x01, 0x3D, 0x78],
        ])
        let entries = try #require(data.txtEntries)
        #expect(entries.map(\.key) == ["v", "secure", "note", "eq"])
        #expect(entries[0].text == "1")
        // A boolean has no value at all; `key=` has an empty one (RFC 6763 §6.4).
        #expect(entries[1].value == nil)
        #expect(entries[1].text == nil)
        #expect(entries[2].value == [])
        // Only the first `=` separates.
        #expect(entries[3].text == "a=b")
        #expect(entries.map(\.description) == ["v=1", "secure", "note=", "eq=a=b"])
    }

    @Test func txtEntriesIsNilForOtherTypes() {
        #expect(DNSRecordData.ptr("_baton._tcp.local.").txtEntries == nil)
    }

    @Test func rejectsKeysRFC6763Forbids() {
        #expect(DNSTXTEntry(key: "") == nil)
        #expect(DNSTXTEntry(key: "a=b", text: "c") == nil)
        #expect(DNSTXTEntry(key: "ké", text: "c") == nil)
        #expect(DNSTXTEntry(key: "tab\t") == nil)
        #expect(DNSTXTEntry(key: "with space") != nil)
        // key=value must fit one 255-byte string.
        #expect(DNSTXTEntry(key: "k", value: [UInt8](repeating: 0x61, count: 253)) != nil)
        #expect(DNSTXTEntry(key: "k", value: [UInt8](repeating: 0x61, count: 254)) == nil)
    }

    @Test func survivesAMessageRoundTrip() throws {
        let entries = [entry("v", "1"), entry("name", "Küche (2)"), entry("debug"), entry("empty", "")]
        let message = DNSMessage(
            isResponse: true, isAuthoritative: true,
            answers: [
                DNSResourceRecord(
                    name: "Küche (2)._baton._tcp.local.", cacheFlush: true, ttl: 4500, data: .txt(entries: entries)),
                DNSResourceRecord(name: "other._baton._tcp.local.", ttl: 4500, data: .txt(entries: [])),
            ])
        let parsed = try DNSMessage(parsing: message.serialized())
        #expect(parsed == message)
        #expect(parsed.answers[0].data.txtEntries == entries)
        #expect(parsed.answers[1].data == .txt([[]]))
    }
}
