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

