import NIOCore

/// An MQTT 5 property list (spec §2.2.2), in wire order. Each identifier has one fixed
/// type; an identifier the spec does not define is a protocol error.
package struct MQTTProperties: Sendable, Equatable {
    package enum Value: Sendable, Equatable {
        case byte(UInt8)
        case twoByte(UInt16)
        case fourByte(UInt32)
        case variable(UInt32)
        case string(String)
        case binary([UInt8])
        case pair(String, String)
    }

    package struct Entry: Sendable, Equatable {
        package var id: UInt8
        package var value: Value
    }

    package var entries: [Entry] = []

    package init(_ entries: [Entry] = []) { self.entries = entries }

    package mutating func append(_ id: UInt8, _ value: Value) { entries.append(Entry(id: id, value: value)) }

    package subscript(id: UInt8) -> Value? { entries.first { $0.id == id }?.value }

    package var isEmpty: Bool { entries.isEmpty }

    // The identifiers Baton's client reads or writes.
    package static let payloadFormatIndicator: UInt8 = 0x01
    package static let messageExpiryInterval: UInt8 = 0x02
    package static let contentType: UInt8 = 0x03
    package static let responseTopic: UInt8 = 0x08
    package static let correlationData: UInt8 = 0x09
    package static let sessionExpiryInterval: UInt8 = 0x11
    package static let assignedClientIdentifier: UInt8 = 0x12
    package static let serverKeepAlive: UInt8 = 0x13
    package static let willDelayInterval: UInt8 = 0x18
    package static let reasonString: UInt8 = 0x1F
    package static let receiveMaximum: UInt8 = 0x21
    package static let topicAliasMaximum: UInt8 = 0x22
    package static let topicAlias: UInt8 = 0x23
    package static let userProperty: UInt8 = 0x26
    package static let maximumPacketSize: UInt8 = 0x27

    /// The type of each identifier of MQTT 5.0 §2.2.2.2.
    enum Kind { case byte, twoByte, fourByte, variable, string, binary, pair }

    static func kind(of id: UInt8) -> Kind? {
        switch id {
        case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A: return .byte
        case 0x13, 0x21, 0x22, 0x23: return .twoByte
        case 0x02, 0x11, 0x18, 0x27: return .fourByte
        case 0x0B: return .variable
        case 0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F: return .string
        case 0x09, 0x16: return .binary
        case 0x26: return .pair
        default: return nil
        }
    }

    /// Where a property list stands. Each identifier belongs in some places only, and all but
    /// User Property (and Subscription Identifier in a PUBLISH) at most once (MQTT 5 §2.2.2.2).
    package struct Place: OptionSet, Sendable {
        package let rawValue: UInt16
        package init(rawValue: UInt16) { self.rawValue = rawValue }

        package static let connect = Place(rawValue: 1 << 0)
        package static let connack = Place(rawValue: 1 << 1)
        package static let publish = Place(rawValue: 1 << 2)
        package static let will = Place(rawValue: 1 << 3)
        package static let puback = Place(rawValue: 1 << 4)
        package static let subscribe = Place(rawValue: 1 << 5)
        package static let suback = Place(rawValue: 1 << 6)
        package static let unsubscribe = Place(rawValue: 1 << 7)
        package static let unsuback = Place(rawValue: 1 << 8)
        package static let disconnect = Place(rawValue: 1 << 9)
        static let acks: Place = [.connack, .puback, .suback, .unsuback, .disconnect]
        static let everywhere = Place(rawValue: 0x3FF)

        /// The packet's name, for one place.
        var name: String {
            let names = ["CONNECT", "CONNACK", "PUBLISH", "a will", "PUBACK", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "DISCONNECT"]
            return (0..<names.count).first { rawValue == 1 << $0 }.map { names[$0] } ?? "packet"
        }
    }

    /// Where identifier `id` may stand (MQTT 5 §2.2.2.2; AUTH's are left out: this client
    /// takes no AUTH packet).
    static func places(of id: UInt8) -> Place {
        switch id {
        case 0x01, 0x02, 0x03, 0x08, 0x09: return [.publish, .will]
        case 0x0B: return [.publish, .subscribe]
        case 0x11: return [.connect, .connack, .disconnect]
        case 0x12, 0x13, 0x1A, 0x24, 0x25, 0x28, 0x29, 0x2A: return .connack
        case 0x15, 0x16, 0x21, 0x22, 0x27: return [.connect, .connack]
        case 0x17, 0x19: return .connect
        case 0x18: return .will
        case 0x1C: return [.connack, .disconnect]
        case 0x1F: return Place.acks
        case 0x23: return .publish
        case 0x26: return Place.everywhere
        default: return []
        }
    }

    /// Reads a property length and the properties it covers, as they may stand in `place`.
    static func read(from buffer: inout ByteBuffer, in place: Place) throws -> MQTTProperties {
        let length = try MQTTWire.readVariableInteger(from: &buffer)
        guard var slice = buffer.readSlice(length: Int(length)) else {
            throw MQTTError.malformed("property length \(length) runs past the packet")
        }
        var properties = MQTTProperties()
        while slice.readableBytes > 0 {
            let id = try MQTTWire.readVariableInteger(from: &slice)
            guard id <= 0x7F, let type = kind(of: UInt8(id)) else {
                throw MQTTError(.protocolError, "unknown property identifier \(id)")
            }
            guard places(of: UInt8(id)).contains(place) else {
                throw MQTTError(.protocolError, "property identifier \(id) has no place in \(place.name)")
            }
            let repeatable = id == userProperty || (id == 0x0B && place == .publish)
            guard repeatable || properties[UInt8(id)] == nil else {
                throw MQTTError(.protocolError, "property identifier \(id) more than once in \(place.name)")
            }
            let value: Value
            switch type {
            case .byte: value = .byte(try MQTTWire.readInteger(from: &slice))
            case .twoByte: value = .twoByte(try MQTTWire.readInteger(from: &slice))
            case .fourByte: value = .fourByte(try MQTTWire.readInteger(from: &slice))
            case .variable: value = .variable(try MQTTWire.readVariableInteger(from: &slice))
            case .string: value = .string(try MQTTWire.readString(from: &slice))
            case .binary: value = .binary(try MQTTWire.readBinary(from: &slice))
            case .pair: value = .pair(try MQTTWire.readString(from: &slice), try MQTTWire.readString(from: &slice))
            }
            properties.append(UInt8(id), value)
        }
        return properties
    }

    /// The bytes the entries take, without the length prefix.
    var contentLength: Int {
        entries.reduce(0) { sum, entry in
            let size: Int
            switch entry.value {
            case .byte: size = 1
            case .twoByte: size = 2
            case .fourByte: size = 4
            case .variable(let v): size = MQTTWire.variableIntegerSize(Int(v))
            case .string(let s): size = 2 + s.utf8.count
            case .binary(let b): size = 2 + b.count
            case .pair(let n, let v): size = 4 + n.utf8.count + v.utf8.count
            }
            return sum + 1 + size
        }
    }

    /// The bytes `write` writes, the length prefix included.
    var encodedLength: Int { MQTTWire.variableIntegerSize(contentLength) + contentLength }

    func write(to buffer: inout ByteBuffer) {
        MQTTWire.writeVariableInteger(contentLength, to: &buffer)
        for entry in entries {
            buffer.writeInteger(entry.id)
            switch entry.value {
            case .byte(let v): buffer.writeInteger(v)
            case .twoByte(let v): buffer.writeInteger(v)
            case .fourByte(let v): buffer.writeInteger(v)
            case .variable(let v): MQTTWire.writeVariableInteger(Int(v), to: &buffer)
            case .string(let s): MQTTWire.writeString(s, to: &buffer)
            case .binary(let b): MQTTWire.writeBinary(b, to: &buffer)
            case .pair(let n, let v):
                MQTTWire.writeString(n, to: &buffer)
                MQTTWire.writeString(v, to: &buffer)
            }
        }
    }
}

extension MQTTPublishProperties {
    /// The wire form: only what is set, user properties in order.
    var wire: MQTTProperties {
        var p = MQTTProperties()
        if let v = messageExpiryInterval { p.append(MQTTProperties.messageExpiryInterval, .fourByte(v)) }
        if let v = contentType { p.append(MQTTProperties.contentType, .string(v)) }
        if let v = responseTopic { p.append(MQTTProperties.responseTopic, .string(v)) }
        if let v = correlationData { p.append(MQTTProperties.correlationData, .binary(v)) }
        for u in userProperties { p.append(MQTTProperties.userProperty, .pair(u.name, u.value)) }
        return p
    }

    /// Reads the publish properties out of a wire list; others (payload format, subscription
    /// identifiers) are dropped.
    init(wire: MQTTProperties) {
        self.init()
        for entry in wire.entries {
            switch (entry.id, entry.value) {
            case (MQTTProperties.messageExpiryInterval, .fourByte(let v)): messageExpiryInterval = v
            case (MQTTProperties.contentType, .string(let v)): contentType = v
            case (MQTTProperties.responseTopic, .string(let v)): responseTopic = v
            case (MQTTProperties.correlationData, .binary(let v)): correlationData = v
            case (MQTTProperties.userProperty, .pair(let n, let v)): userProperties.append(MQTTUserProperty(name: n, value: v))
            default: break
            }
        }
    }
}
