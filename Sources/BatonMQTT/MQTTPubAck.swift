/// The broker's answer to a QoS 1 publish (or a success stand-in for a written QoS 0 one).
/// A reason code of 0x80 or more is the broker refusing the message, still an answer.
public struct MQTTPubAck: Sendable, Equatable {
    public var reasonCode: UInt8
    public var reasonString: String?

    public init(reasonCode: UInt8, reasonString: String? = nil) {
        self.reasonCode = reasonCode
        self.reasonString = reasonString
    }

    /// The message was accepted, but nobody subscribes to its topic (reason 0x10): the
    /// receiver is offline, known within one round trip.
    public var noMatchingSubscribers: Bool { reasonCode == 0x10 }
}
