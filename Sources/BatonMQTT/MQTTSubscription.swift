/// One topic filter to subscribe to. `noLocal` keeps this client's own publishes from
/// coming back to it.
public struct MQTTSubscription: Sendable, Hashable {
    public var filter: String
    public var qos: MQTTQoS
    public var noLocal: Bool

    public init(filter: String, qos: MQTTQoS = .atLeastOnce, noLocal: Bool = false) {
        self.filter = filter
        self.qos = qos
        self.noLocal = noLocal
    }
}
