/// An MQTT 5 user property: a UTF-8 name and value pair; names may repeat.
public struct MQTTUserProperty: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}
