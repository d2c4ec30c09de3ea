/// The delivery guarantee of a message. QoS 2 is not offered: the broker link deduplicates
/// itself, so at-least-once is all it needs.
public enum MQTTQoS: UInt8, Sendable, Hashable {
    /// Sent once, never acknowledged.
    case atMostOnce = 0
    /// Acknowledged by PUBACK; may arrive more than once.
    case atLeastOnce = 1
}
