// TXT → device: the `_baton._tcp` TXT record of anyone on the link, read into the device a
// browser shows (DeviceAdvertisement.device(from:)), the way MDNSBrowser reads it: the record's
// data parsed out of a DNS message, its DNS-SD entries (RFC 6763 §6), then the device.
//
// Input: one byte n, n bytes of instance label (the device's name), then the TXT record's data.
// Checked: nothing traps; a device has its TXT `id`; a device advertised again
// (DeviceAdvertisement.txt(for:)) through a serialized TXT record reads back as the same device
// whenever no value was too long for a TXT string.
import BatonCore
import BatonDiscovery
import FuzzSupport
import NIOCore

let serviceType: [UInt8] = [6] + Array("_baton".utf8) + [4] + Array("_tcp".utf8) + [5] + Array("local".utf8) + [0]
let addresses = [
    MDNSServiceAddress(bytes: [192, 168, 1, 20], interfaceIndex: 1),
    MDNSServiceAddress(bytes: [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], interfaceIndex: 2),
]

/// A response holding one TXT record, `rdata`, for the instance `label`.
func packet(label: ArraySlice<UInt8>, rdata: some Collection<UInt8>) -> ByteBuffer {
    var buffer = ByteBuffer()
    buffer.writeBytes([0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0])
    buffer.writeInteger(UInt8(label.count))
    buffer.writeBytes(label)
    buffer.writeBytes(serviceType)
    buffer.writeBytes([0, 16, 0x80, 1, 0, 0, 0x11, 0x94])
    buffer.writeInteger(UInt16(rdata.count))
    buffer.writeBytes(rdata)
    return buffer
}

/// The device a browser would show for `txt` under `instance`, with the fixed addresses.
func device(instance: DNSName, txt: [DNSTXTEntry]) -> (MDNSService, RemoteDevice?) {
    let service = MDNSService(
        instanceName: instance.firstLabel ?? "", fullName: instance, hostName: "host.local.", port: 4_711,
        addresses: addresses, txt: txt, interfaceIndices: [1, 2])
    return (service, DeviceAdvertisement.device(from: service))
}

fuzz { input in
    guard let first = input.first else { return }
    let bytes = Array(input.dropFirst())
    let n = min(Int(first) & 63, bytes.count)
    let label = bytes[..<n]
    let rdata = bytes[n...].prefix(Int(UInt16.max))
    guard label.count > 0, let message = try? DNSMessage(parsing: packet(label: label, rdata: rdata)),
          let record = message.answers.first, let entries = record.data.txtEntries else { return }
    let (service, found) = device(instance: record.name, txt: entries)
    _ = service.description
    guard let found else {
        if let id = service.txtValue("id"), !id.isEmpty { fuzzFailure("a TXT record with an id gave no device: \(entries)") }
        return
    }
    note("device \(found.info)")
    guard !found.info.id.isEmpty, found.info.id == service.txtValue("id") else { fuzzFailure("a device without its TXT id: \(found)") }
    guard found.endpoints.count == addresses.count else { fuzzFailure("endpoints lost: \(found.endpoints)") }

    // Advertised again, through the wire, read again.
    let advertised = DeviceAdvertisement.txt(for: found.info, account: found.account, protocolVersion: found.protocolVersion)
    var out = ByteBuffer()
    DNSMessage(
        isResponse: true, isAuthoritative: true,
        answers: [DNSResourceRecord(name: record.name, cacheFlush: true, ttl: 4_500, data: .txt(entries: advertised))]
    ).serialize(into: &out)
    guard let reread = try? DNSMessage(parsing: out), let again = reread.answers.first?.data.txtEntries else {
        fuzzFailure("a device's own TXT record does not parse: \(advertised)")
    }
    let (_, second) = device(instance: record.name, txt: again)
    guard let second else { fuzzFailure("a device's own TXT record gives no device: \(advertised)") }
    let fits = [("id", found.info.id), ("acct", found.account), ("model", found.info.model), ("mfr", found.info.manufacturer)]
        .allSatisfy { key, value in key.utf8.count + 1 + value.utf8.count <= 255 }
    if fits, second != found {
        fuzzFailure("a device advertised again reads back differently:\n\(found)\n\(second)")
    }
}
