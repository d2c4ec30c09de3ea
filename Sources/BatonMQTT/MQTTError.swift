/// Why an operation of `MQTTClient` failed, or why the codec refused bytes.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The client was stopped (or never started) before the operation completed.
        case stopped
        /// Too many QoS 1 publishes wait for a connection.
        case queueFull
        /// A QoS 0 publish or an unsubscribe while there is no connection.
        case notConnected
        /// A packet over the agreed maximum size, either way.
        case packetTooLarge
        /// Bytes that are not an MQTT 5 packet.
        case malformedPacket
        /// A well-formed packet that breaks the protocol.
        case protocolError
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    static func malformed(_ message: String) -> MQTTError { MQTTError(.malformedPacket, message) }
}
