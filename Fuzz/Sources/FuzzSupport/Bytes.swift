/// `value` as a protobuf varint.
public func varint(_ value: Int) -> [UInt8] {
    var value = UInt64(value)
    var out: [UInt8] = []
    while value >= 0x80 {
        out.append(UInt8(truncatingIfNeeded: value) | 0x80)
        value >>= 7
    }
    out.append(UInt8(value))
    return out
}

/// The payload of a ServiceRequest frame (Frame field 9) on channel 1, request 1, whose
/// `message` (ServiceRequest field 3) is the Dictionary fields `message`.
public func serviceRequestPayload(message: [UInt8]) -> [UInt8] {
    let body: [UInt8] = [0x08, 0x01, 0x10, 0x01, 0x1A] + varint(message.count) + message
    return [0x4A] + varint(body.count) + body
}

/// Whether `error` is Baton's protobuf reader refusing a group (wire types 3 and 4, proto2's
/// groups), which SwiftProtobuf skips as an unknown field. A known difference
/// (Tests/BatonWireTests/WireFuzzRegressionTests.swift); the harnesses let it pass, so that
/// the fuzzer looks further.
public func isGroupRefusal(_ error: any Error) -> Bool {
    let text = "\(error)"
    return text.contains("wire type 3") || text.contains("wire type 4")
}
