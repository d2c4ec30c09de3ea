// DNS messages (RFC 1035 §4, RFC 6762) as BatonDiscovery reads them: every packet that reaches
// port 5353 on any interface, from anyone on the link.
//
// Checked for every input: parsing throws or succeeds, never traps; a parsed message
// serializes (with name compression) and parses back to the same message, and every record's
// data has an uncompressed form, a description and (for TXT) its DNS-SD entries.
import BatonDiscovery
import FuzzSupport
import NIOCore

fuzz { input in
    let message: DNSMessage
    do {
        message = try DNSMessage(parsing: ByteBuffer(bytes: input))
    } catch {
        _ = "\(error)"
        return
    }
    note("\(message)")
    let bytes = message.serialized()
    let again: DNSMessage
    do {
        again = try DNSMessage(parsing: bytes)
    } catch {
        fuzzFailure("a parsed message, serialized again, does not parse: \(error)\n\(message)")
    }
    guard again == message else {
        fuzzFailure("a parsed message, serialized and parsed again, changed:\n\(message)\n\(again)")
    }
    _ = message.description
    for record in message.answers + message.authorities + message.additionals {
        _ = record.data.uncompressedBytes
        _ = record.data.txtEntries
        _ = record.lexicographicOrder(comparedTo: record)
        guard record.isSameRecord(as: record) else { fuzzFailure("a record is not the same as itself: \(record)") }
    }
}
