/// The message the broker publishes for this client when its connection ends without a
/// normal DISCONNECT (or with DISCONNECT 0x04), `delayInterval` seconds later unless the
/// client is back by then.
public struct MQTTWill: Sendable, Equatable {
    public var message: MQTTMessage
    public var delayInterval: UInt32

    public init(message: MQTTMessage, delayInterval: UInt32 = 0) {
        self.message = message
        self.delayInterval = delayInterval
    }
}
