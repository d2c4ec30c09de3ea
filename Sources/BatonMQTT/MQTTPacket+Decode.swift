import NIOCore

extension MQTTPacket {
    /// Reads one whole packet off the front of `buffer`, or returns nil (consuming nothing)
    /// while its bytes have not all arrived. Holds no state between calls.
    ///
    /// Throws when the bytes are not an MQTT 5 packet, and as soon as a fixed header
    /// announces a packet larger than `maximumPacketSize` (the whole packet, header
    /// included, as MQTT 5 counts it), before waiting for its bytes.
    package static func decode(from buffer: inout ByteBuffer, maximumPacketSize: Int) throws -> MQTTPacket? {
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        guard let (remaining, lengthSize) = try MQTTWire.peekVariableInteger(in: buffer, at: 1) else { return nil }
        let total = 1 + lengthSize + remaining
        guard total <= maximumPacketSize else {
            throw MQTTError(.packetTooLarge, "packet of \(total) bytes is over the maximum of \(maximumPacketSize)")
        }
        guard buffer.readableBytes >= total else { return nil }
        buffer.moveReaderIndex(forwardBy: 1 + lengthSize)
        var body = buffer.readSlice(length: remaining)!
        let packet = try decodeBody(type: first >> 4, flags: first & 0x0F, body: &body)
        guard body.readableBytes == 0 else {
            throw MQTTError.malformed("\(body.readableBytes) bytes left over after packet type \(first >> 4)")
        }
        return packet
    }

    private static func decodeBody(type: UInt8, flags: UInt8, body: inout ByteBuffer) throws -> MQTTPacket {
        // Every type but PUBLISH has fixed flags (spec §2.1.3).
        let expectedFlags: UInt8 = (type == 8 || type == 10) ? 0x02 : 0x00
        if type != 3, flags != expectedFlags {
            throw MQTTError.malformed("packet type \(type) with flags \(flags)")
        }
        switch type {
        case 1: return .connect(try decodeConnect(&body))
        case 2:
            let ackFlags: UInt8 = try MQTTWire.readInteger(from: &body)
            guard ackFlags & 0xFE == 0 else { throw MQTTError.malformed("CONNACK flags \(ackFlags)") }
            let code: UInt8 = try MQTTWire.readInteger(from: &body)
            return .connack(ConnAck(sessionPresent: ackFlags & 1 == 1, reasonCode: code,
                                    properties: try MQTTProperties.read(from: &body, in: .connack)))
        case 3: return .publish(try decodePublish(flags: flags, &body))
        case 4:
            let id: UInt16 = try MQTTWire.readInteger(from: &body)
            let code: UInt8 = try body.readableBytes > 0 ? MQTTWire.readInteger(from: &body) : 0
            let properties = try body.readableBytes > 0 ? MQTTProperties.read(from: &body, in: .puback) : MQTTProperties()
            return .puback(PubAck(packetID: id, reasonCode: code, properties: properties))
        case 8:
            let id: UInt16 = try MQTTWire.readInteger(from: &body)
            let properties = try MQTTProperties.read(from: &body, in: .subscribe)
            var subscriptions: [MQTTSubscription] = []
            while body.readableBytes > 0 {
                let filter = try MQTTWire.readString(from: &body)
                let options: UInt8 = try MQTTWire.readInteger(from: &body)
                guard options & 0xC0 == 0, let qos = MQTTQoS(rawValue: options & 0x03) else {
                    throw MQTTError.malformed("subscription options \(options)")
                }
                subscriptions.append(MQTTSubscription(filter: filter, qos: qos, noLocal: options & 0x04 != 0))
            }
            guard !subscriptions.isEmpty else { throw MQTTError(.protocolError, "SUBSCRIBE without a filter") }
            return .subscribe(Subscribe(packetID: id, subscriptions: subscriptions, properties: properties))
        case 9, 11:
            let id: UInt16 = try MQTTWire.readInteger(from: &body)
            let properties = try MQTTProperties.read(from: &body, in: type == 9 ? .suback : .unsuback)
            let codes = Array(body.readableBytesView)
            body.moveReaderIndex(to: body.writerIndex)
            let ack = SubAck(packetID: id, reasonCodes: codes, properties: properties)
            return type == 9 ? .suback(ack) : .unsuback(ack)
        case 10:
            let id: UInt16 = try MQTTWire.readInteger(from: &body)
            let properties = try MQTTProperties.read(from: &body, in: .unsubscribe)
            var filters: [String] = []
            while body.readableBytes > 0 { filters.append(try MQTTWire.readString(from: &body)) }
            guard !filters.isEmpty else { throw MQTTError(.protocolError, "UNSUBSCRIBE without a filter") }
            return .unsubscribe(Unsubscribe(packetID: id, filters: filters, properties: properties))
        case 12, 13:
            guard body.readableBytes == 0 else { throw MQTTError.malformed("PINGREQ/PINGRESP with a body") }
            return type == 12 ? .pingreq : .pingresp
        case 14:
            let code: UInt8 = try body.readableBytes > 0 ? MQTTWire.readInteger(from: &body) : 0
            let properties = try body.readableBytes > 0 ? MQTTProperties.read(from: &body, in: .disconnect) : MQTTProperties()
            return .disconnect(Disconnect(reasonCode: code, properties: properties))
        case 5, 6, 7, 15:
            throw MQTTError(.protocolError, "packet type \(type) (QoS 2 or AUTH), which this client never asks for")
        default:
            throw MQTTError.malformed("packet type \(type) does not exist")
        }
    }

    private static func decodePublish(flags: UInt8, _ body: inout ByteBuffer) throws -> Publish {
        guard let qos = MQTTQoS(rawValue: (flags >> 1) & 0x03) else {
            throw MQTTError(.protocolError, "PUBLISH with QoS \((flags >> 1) & 0x03)")
        }
        let topic = try MQTTWire.readString(from: &body)
        guard !topic.isEmpty, !topic.contains(where: { $0 == "+" || $0 == "#" }) else {
            // An empty topic would need a topic alias, and this client allows none.
            throw MQTTError(.protocolError, "PUBLISH topic \"\(topic)\" is empty or holds a wildcard")
        }
        let id: UInt16? = try qos == .atMostOnce ? nil : MQTTWire.readInteger(from: &body) as UInt16
        if id == 0 { throw MQTTError(.protocolError, "PUBLISH with packet id 0") }
        let properties = try MQTTProperties.read(from: &body, in: .publish)
        if properties[MQTTProperties.topicAlias] != nil {
            throw MQTTError(.protocolError, "PUBLISH with a topic alias, though Topic Alias Maximum is 0")
        }
        let payload = body.readSlice(length: body.readableBytes)!
        let message = MQTTMessage(topic: topic, payload: payload, qos: qos, retain: flags & 0x01 != 0,
                                  properties: MQTTPublishProperties(wire: properties))
        return Publish(message: message, packetID: id, dup: flags & 0x08 != 0)
    }

    private static func decodeConnect(_ body: inout ByteBuffer) throws -> Connect {
        guard try MQTTWire.readString(from: &body) == "MQTT" else { throw MQTTError.malformed("CONNECT protocol name") }
        let level: UInt8 = try MQTTWire.readInteger(from: &body)
        guard level == 5 else { throw MQTTError(.protocolError, "protocol level \(level), not 5") }
        let flags: UInt8 = try MQTTWire.readInteger(from: &body)
        guard flags & 0x01 == 0 else { throw MQTTError.malformed("CONNECT reserved flag set") }
        let keepAlive: UInt16 = try MQTTWire.readInteger(from: &body)
        let properties = try MQTTProperties.read(from: &body, in: .connect)
        var connect = Connect(clientID: try MQTTWire.readString(from: &body), keepAlive: keepAlive,
                              cleanStart: flags & 0x02 != 0, properties: properties)
        if flags & 0x04 != 0 {
            guard let qos = MQTTQoS(rawValue: (flags >> 3) & 0x03) else { throw MQTTError.malformed("will QoS") }
            let willProperties = try MQTTProperties.read(from: &body, in: .will)
            let topic = try MQTTWire.readString(from: &body)
            let payload = try MQTTWire.readBinary(from: &body)
            var delay: UInt32 = 0
            if case .fourByte(let d)? = willProperties[MQTTProperties.willDelayInterval] { delay = d }
            let message = MQTTMessage(topic: topic, payload: ByteBuffer(bytes: payload), qos: qos,
                                      retain: flags & 0x20 != 0, properties: MQTTPublishProperties(wire: willProperties))
            connect.will = MQTTWill(message: message, delayInterval: delay)
        }
        if flags & 0x80 != 0 { connect.username = try MQTTWire.readString(from: &body) }
        if flags & 0x40 != 0 { connect.password = try MQTTWire.readBinary(from: &body) }
        return connect
    }
}
