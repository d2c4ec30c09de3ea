/// The properties of a PUBLISH (and of a will) that the client sends and hands back on receipt.
/// Topic aliases and subscription identifiers are not used.
public struct MQTTPublishProperties: Sendable, Equatable {
    /// Seconds the broker keeps the message (also a retained one) before dropping it.
    public var messageExpiryInterval: UInt32?
    public var responseTopic: String?
    public var correlationData: [UInt8]?
    public var contentType: String?
    public var userProperties: [MQTTUserProperty]

    public init(
        messageExpiryInterval: UInt32? = nil,
        responseTopic: String? = nil,
        correlationData: [UInt8]? = nil,
        contentType: String? = nil,
        userProperties: [MQTTUserProperty] = []
    ) {
        self.messageExpiryInterval = messageExpiryInterval
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.contentType = contentType
        self.userProperties = userProperties
    }
}
