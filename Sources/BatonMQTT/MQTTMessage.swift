import NIOCore

/// An application message, sent with `MQTTClient.publish` or received through the delegate.
/// A received payload is a slice of the bytes read from the socket (no copy).
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: ByteBuffer
    public var qos: MQTTQoS
    public var retain: Bool
    public var properties: MQTTPublishProperties

    public init(
        topic: String,
        payload: ByteBuffer,
        qos: MQTTQoS = .atLeastOnce,
        retain: Bool = false,
        properties: MQTTPublishProperties = MQTTPublishProperties()
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }
}
