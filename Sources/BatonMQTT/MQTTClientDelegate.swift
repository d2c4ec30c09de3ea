/// What an `MQTTClient` tells its owner; every call is made on the client's event loop.
public protocol MQTTClientDelegate: AnyObject {
    /// A CONNACK with success. The client has re-subscribed (or is doing so) by itself;
    /// the owner republishes what must be current (presence) here.
    func mqttClient(_ client: MQTTClient, connectedWithSessionPresent sessionPresent: Bool)
    /// A message on a subscribed topic. For QoS 1 the PUBACK goes out after this returns.
    func mqttClient(_ client: MQTTClient, received message: MQTTMessage)
    /// An established connection ended; the client reconnects by itself unless stopped.
    func mqttClient(_ client: MQTTClient, disconnected reason: String)
}

extension MQTTClientDelegate {
    public func mqttClient(_ client: MQTTClient, connectedWithSessionPresent sessionPresent: Bool) {}
    public func mqttClient(_ client: MQTTClient, disconnected reason: String) {}
}
