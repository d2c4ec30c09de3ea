import NIOCore

extension MQTTPacket {
    /// Writes the packet, fixed header included. Lengths are computed first, so the payload
    /// is written once into a buffer of the right size.
    package func encode(into buffer: inout ByteBuffer) {
        switch self {
        case .connect(let c):
            var flags: UInt8 = c.cleanStart ? 0x02 : 0
            var willProperties = MQTTProperties()
            if let will = c.will {
                flags |= 0x04 | (will.message.qos.rawValue << 3) | (will.message.retain ? 0x20 : 0)
                if will.delayInterval > 0 { willProperties.append(MQTTProperties.willDelayInterval, .fourByte(will.delayInterval)) }
                willProperties.entries += will.message.properties.wire.entries
            }
            if c.username != nil { flags |= 0x80 }
            if c.password != nil { flags |= 0x40 }
            var length = 6 + 1 + 1 + 2 + c.properties.encodedLength + 2 + c.clientID.utf8.count
            if let will = c.will {
                length += willProperties.encodedLength + 2 + will.message.topic.utf8.count + 2 + will.message.payload.readableBytes
            }
            if let u = c.username { length += 2 + u.utf8.count }
            if let p = c.password { length += 2 + p.count }
            Self.writeFixedHeader(0x10, length, &buffer)
            MQTTWire.writeString("MQTT", to: &buffer)
            buffer.writeInteger(UInt8(5))
            buffer.writeInteger(flags)
            buffer.writeInteger(c.keepAlive)
            c.properties.write(to: &buffer)
            MQTTWire.writeString(c.clientID, to: &buffer)
            if let will = c.will {
                willProperties.write(to: &buffer)
                MQTTWire.writeString(will.message.topic, to: &buffer)
                buffer.writeInteger(UInt16(truncatingIfNeeded: will.message.payload.readableBytes))
                buffer.writeImmutableBuffer(will.message.payload)
            }
            if let u = c.username { MQTTWire.writeString(u, to: &buffer) }
            if let p = c.password { MQTTWire.writeBinary(p, to: &buffer) }
        case .connack(let a):
            Self.writeFixedHeader(0x20, 2 + a.properties.encodedLength, &buffer)
            buffer.writeInteger(UInt8(a.sessionPresent ? 1 : 0))
            buffer.writeInteger(a.reasonCode)
            a.properties.write(to: &buffer)
        case .publish(let p):
            let m = p.message
            let properties = m.properties.wire
            let flags = (p.dup ? 0x08 : 0) | (m.qos.rawValue << 1) | (m.retain ? 0x01 : 0)
            let length = 2 + m.topic.utf8.count + (p.packetID == nil ? 0 : 2) + properties.encodedLength + m.payload.readableBytes
            Self.writeFixedHeader(0x30 | flags, length, &buffer)
            MQTTWire.writeString(m.topic, to: &buffer)
            if let id = p.packetID { buffer.writeInteger(id) }
            properties.write(to: &buffer)
            buffer.writeImmutableBuffer(m.payload)
        case .puback(let a):
            if a.reasonCode == 0, a.properties.isEmpty {
                Self.writeFixedHeader(0x40, 2, &buffer)
                buffer.writeInteger(a.packetID)
            } else {
                Self.writeFixedHeader(0x40, 3 + a.properties.encodedLength, &buffer)
                buffer.writeInteger(a.packetID)
                buffer.writeInteger(a.reasonCode)
                a.properties.write(to: &buffer)
            }
        case .subscribe(let s):
            let length = 2 + s.properties.encodedLength + s.subscriptions.reduce(0) { $0 + 3 + $1.filter.utf8.count }
            Self.writeFixedHeader(0x82, length, &buffer)
            buffer.writeInteger(s.packetID)
            s.properties.write(to: &buffer)
            for sub in s.subscriptions {
                MQTTWire.writeString(sub.filter, to: &buffer)
                buffer.writeInteger(sub.qos.rawValue | (sub.noLocal ? 0x04 : 0))
            }
        case .suback(let a), .unsuback(let a):
            let type: UInt8 = if case .suback = self { 0x90 } else { 0xB0 }
            Self.writeFixedHeader(type, 2 + a.properties.encodedLength + a.reasonCodes.count, &buffer)
            buffer.writeInteger(a.packetID)
            a.properties.write(to: &buffer)
            buffer.writeBytes(a.reasonCodes)
        case .unsubscribe(let u):
            let length = 2 + u.properties.encodedLength + u.filters.reduce(0) { $0 + 2 + $1.utf8.count }
            Self.writeFixedHeader(0xA2, length, &buffer)
            buffer.writeInteger(u.packetID)
            u.properties.write(to: &buffer)
            for filter in u.filters { MQTTWire.writeString(filter, to: &buffer) }
        case .pingreq:
            Self.writeFixedHeader(0xC0, 0, &buffer)
        case .pingresp:
            Self.writeFixedHeader(0xD0, 0, &buffer)
        case .disconnect(let d):
            if d.reasonCode == 0, d.properties.isEmpty {
                Self.writeFixedHeader(0xE0, 0, &buffer)
            } else {
                Self.writeFixedHeader(0xE0, 1 + d.properties.encodedLength, &buffer)
                buffer.writeInteger(d.reasonCode)
                d.properties.write(to: &buffer)
            }
        }
    }

    /// The packet in a fresh buffer from `allocator`.
    package func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: encodedSizeHint)
        encode(into: &buffer)
        return buffer
    }

    private var encodedSizeHint: Int {
        if case .publish(let p) = self { return 64 + p.message.topic.utf8.count + p.message.payload.readableBytes }
        return 64
    }

    private static func writeFixedHeader(_ first: UInt8, _ remaining: Int, _ buffer: inout ByteBuffer) {
        buffer.writeInteger(first)
        MQTTWire.writeVariableInteger(remaining, to: &buffer)
    }
}
