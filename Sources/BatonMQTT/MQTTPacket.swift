import NIOCore

/// One MQTT 5 control packet, as the codec reads and writes it. QoS 2 flows and AUTH are
/// not part of it: the client never asks for them, so they are protocol errors on receipt.
package enum MQTTPacket: Sendable, Equatable {
    case connect(Connect)
    case connack(ConnAck)
    case publish(Publish)
    case puback(PubAck)
    case subscribe(Subscribe)
    case suback(SubAck)
    case unsubscribe(Unsubscribe)
    case unsuback(SubAck)
    case pingreq
    case pingresp
    case disconnect(Disconnect)

    package struct Connect: Sendable, Equatable {
        package var clientID: String
        package var keepAlive: UInt16
        package var cleanStart: Bool
        package var username: String?
        package var password: [UInt8]?
        package var will: MQTTWill?
        package var properties: MQTTProperties

        package init(clientID: String, keepAlive: UInt16, cleanStart: Bool, username: String? = nil,
                     password: [UInt8]? = nil, will: MQTTWill? = nil, properties: MQTTProperties = MQTTProperties()) {
            self.clientID = clientID
            self.keepAlive = keepAlive
            self.cleanStart = cleanStart
            self.username = username
            self.password = password
            self.will = will
            self.properties = properties
        }
    }

    package struct ConnAck: Sendable, Equatable {
        package var sessionPresent: Bool
        package var reasonCode: UInt8
        package var properties: MQTTProperties

        package init(sessionPresent: Bool, reasonCode: UInt8, properties: MQTTProperties = MQTTProperties()) {
            self.sessionPresent = sessionPresent
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }

    package struct Publish: Sendable, Equatable {
        package var message: MQTTMessage
        package var packetID: UInt16?
        package var dup: Bool

        package init(message: MQTTMessage, packetID: UInt16?, dup: Bool = false) {
            self.message = message
            self.packetID = packetID
            self.dup = dup
        }
    }

    package struct PubAck: Sendable, Equatable {
        package var packetID: UInt16
        package var reasonCode: UInt8
        package var properties: MQTTProperties

        package init(packetID: UInt16, reasonCode: UInt8 = 0, properties: MQTTProperties = MQTTProperties()) {
            self.packetID = packetID
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }

    package struct Subscribe: Sendable, Equatable {
        package var packetID: UInt16
        package var subscriptions: [MQTTSubscription]
        package var properties: MQTTProperties

        package init(packetID: UInt16, subscriptions: [MQTTSubscription], properties: MQTTProperties = MQTTProperties()) {
            self.packetID = packetID
            self.subscriptions = subscriptions
            self.properties = properties
        }
    }

    /// SUBACK and UNSUBACK: one reason code per filter, in order.
    package struct SubAck: Sendable, Equatable {
        package var packetID: UInt16
        package var reasonCodes: [UInt8]
        package var properties: MQTTProperties

        package init(packetID: UInt16, reasonCodes: [UInt8], properties: MQTTProperties = MQTTProperties()) {
            self.packetID = packetID
            self.reasonCodes = reasonCodes
            self.properties = properties
        }
    }

    package struct Unsubscribe: Sendable, Equatable {
        package var packetID: UInt16
        package var filters: [String]
        package var properties: MQTTProperties

        package init(packetID: UInt16, filters: [String], properties: MQTTProperties = MQTTProperties()) {
            self.packetID = packetID
            self.filters = filters
            self.properties = properties
        }
    }

    package struct Disconnect: Sendable, Equatable {
        package var reasonCode: UInt8
        package var properties: MQTTProperties

        package init(reasonCode: UInt8 = 0, properties: MQTTProperties = MQTTProperties()) {
            self.reasonCode = reasonCode
            self.properties = properties
        }
    }
}
