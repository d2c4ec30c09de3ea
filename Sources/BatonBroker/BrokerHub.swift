import BatonCore
import BatonMQTT
import BatonSecurity
import Logging
import NIOCore
import NIOSSL

/// One process's connection to the account's broker: an MQTT 5 client whose inbox carries
/// every broker link of the process (``BrokerLink``), and whose other subscriptions (presence)
/// go to whoever asked for them. An agent's hub also hears hellos, which its listener turns
/// into links.
///
/// Lives on its event loop: call it there.
public final class BrokerHub: MQTTClientDelegate, @unchecked Sendable {
    /// Whose hub: an agent (client id `baton-DEVICE`, inbox `.../in/agent`) or one client
    /// process (`baton-DEVICE-TOKEN`, inbox `.../in/TOKEN`).
    public enum Role: Sendable {
        case agent
        case client
    }

    /// Where the broker is and how to reach it.
    public struct Endpoint: Sendable {
        public var host: String
        public var port: Int
        /// TLS with this device's certificate (nil: plaintext, `mqtt://`).
        public var tls: TLSConfiguration?

        public init(host: String, port: Int, tls: TLSConfiguration?) {
            self.host = host
            self.port = port
            self.tls = tls
        }
    }

    public let eventLoop: any EventLoop
    public let topics: BrokerTopics
    /// This device's id, lower case.
    public let deviceID: String
    /// The topic this process's links hear on.
    public let inbox: String
    let credentials: SealCredentials
    let trustStore: TrustStore
    let logger: Logger
    private(set) var client: MQTTClient!
    /// Links by peer and session.
    private var links: [String: BrokerLink] = [:]
    /// Who hears hellos (an agent's listener).
    var helloHandler: ((BrokerEnvelope, _ replyTo: String) -> Void)?
    /// Who hears messages on other topics, by topic filter.
    private var observers: [(filter: String, handler: (MQTTMessage) -> Void)] = []
    /// Who hears that the broker let this client in (again).
    private var connectedHandlers: [(Bool) -> Void] = []
    private let subscribed: EventLoopPromise<Void>
    /// Whether the MQTT client is connected now.
    public private(set) var connected = false

    /// A hub for `credentials`' device on the broker at `endpoint`; `will` is what the broker
    /// publishes should this client vanish (an agent's offline presence). Call ``start()``.
    public init(
        endpoint: Endpoint, role: Role, trustStore: TrustStore, will: MQTTWill? = nil, keepAlive: UInt16 = 30,
        sessionExpiry: UInt32 = 0, eventLoop: any EventLoop, logger: Logger
    ) throws {
        self.eventLoop = eventLoop
        self.trustStore = trustStore
        self.logger = logger
        credentials = try SealCredentials(trustStore.credentials)
        deviceID = trustStore.credentials.deviceID.lowercased()
        topics = BrokerTopics(account: trustStore.credentials.fingerprint.hex)
        let clientID: String
        switch role {
        case .agent:
            inbox = topics.agentInbox(deviceID)
            clientID = BrokerTopics.agentClientID(deviceID)
        case .client:
            let token = (0..<8).map { _ in UInt8.random(in: 0...255) }.hexDigits
            inbox = topics.clientInbox(deviceID, token: token)
            clientID = BrokerTopics.clientID(deviceID, token: token)
        }
        subscribed = eventLoop.makePromise()
        var configuration = MQTTClient.Configuration(host: endpoint.host, port: endpoint.port, clientID: clientID)
        configuration.tls = endpoint.tls
        configuration.keepAlive = keepAlive
        configuration.will = will
        // A session that outlives a short drop keeps the inbox's messages and holds a delayed
        // will back: a flap is not a departure.
        configuration.cleanStart = false
        configuration.sessionExpiryInterval = sessionExpiry
        client = MQTTClient(configuration: configuration, eventLoop: eventLoop, logger: logger)
        client.delegate = self
    }

    /// Connects (and reconnects after any loss), subscribed to the inbox. The future completes
    /// once the broker took the subscription the first time.
    @discardableResult
    public func start() -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        // Once: everything that needs the connection starts it (a subscription made before the
        // client starts would never be sent).
        guard !started else { return subscribed.futureResult }
        started = true
        client.start()
        client.subscribe([MQTTSubscription(filter: inbox, qos: .atLeastOnce, noLocal: true)]).whenComplete { [self] result in
            switch result {
            case .success(let codes) where codes.allSatisfy({ $0 < 0x80 }): subscribed.succeed(())
            case .success(let codes): subscribed.fail(BrokerLinkError.refused("the broker refused the inbox subscription (reason \(codes))"))
            case .failure(let error): subscribed.fail(error)
            }
        }
        return subscribed.futureResult
    }

    private var started = false

    /// Completes once the inbox is subscribed (starting the hub if nothing did yet).
    var ready: EventLoopFuture<Void> { start() }

    /// Leaves the inbox (a session the broker keeps for a while must not keep it: a request to
    /// this process then hears "no matching subscribers" at once), waiting a second at most,
    /// then disconnects; links end.
    public func stop(disconnectWithWill: Bool = false) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            for link in links.values { link.hubStopped() }
            links = [:]
            subscribed.fail(BrokerLinkError.closed("the broker connection was stopped"))
            guard connected else { return client.stop(disconnectWithWill: disconnectWithWill) }
            let left = eventLoop.makePromise(of: Void.self)
            let timer = eventLoop.scheduleTask(in: .seconds(1)) { left.succeed(()) }
            client.unsubscribe([inbox]).whenComplete { _ in
                timer.cancel()
                left.succeed(())
            }
            return left.futureResult.flatMap { [self] in client.stop(disconnectWithWill: disconnectWithWill) }
        }
    }

    /// Subscribes `filter` (QoS 1), its messages to `handler`.
    public func observe(_ filter: String, _ handler: @escaping (MQTTMessage) -> Void) -> EventLoopFuture<[UInt8]> {
        start()
        observers.append((filter, handler))
        return client.subscribe([MQTTSubscription(filter: filter, qos: .atLeastOnce, noLocal: false)])
    }

    /// `handler` hears every CONNACK (whether the broker kept the session).
    public func onConnected(_ handler: @escaping (Bool) -> Void) {
        eventLoop.preconditionInEventLoop()
        connectedHandlers.append(handler)
        if connected { handler(true) }
    }

    /// Publishes `message` (QoS 1 unless it says otherwise).
    public func publish(_ message: MQTTMessage) -> EventLoopFuture<MQTTPubAck> {
        client.publish(message)
    }

    /// Sends `envelope` to `topic` (QoS 1), expiring with the message in `expiry` seconds;
    /// `replyTo` becomes the response topic.
    func send(_ envelope: BrokerEnvelope, to topic: String, expiry: UInt32, replyTo: String? = nil) -> EventLoopFuture<MQTTPubAck> {
        var properties = MQTTPublishProperties()
        properties.messageExpiryInterval = expiry
        properties.responseTopic = replyTo
        return client.publish(MQTTMessage(
            topic: topic, payload: envelope.encoded(), qos: .atLeastOnce, retain: false, properties: properties))
    }

    func register(_ link: BrokerLink) {
        links[link.key] = link
    }

    func remove(_ link: BrokerLink) {
        if links[link.key] === link { links[link.key] = nil }
    }

    func link(peer: String, session: String) -> BrokerLink? {
        links[peer + "/" + session]
    }

    /// Devices whose presence said they left (or whose will stood), as a watcher on this hub
    /// heard: a dial to one fails at once, and its links end.
    private var departed: Set<String> = []

    /// `device` is present on the broker.
    func present(_ device: String) {
        departed.remove(device)
    }

    /// `device` left the broker: its links end (their requests fail now, not at their
    /// deadlines), and dials to it fail until it is back.
    func gone(_ device: String) {
        departed.insert(device)
        for link in links.values where link.peerID == device { link.peerLeft() }
    }

    /// Whether a watcher on this hub saw `device` leave (and not come back).
    func hasLeft(_ device: String) -> Bool { departed.contains(device) }

    /// How many links are open: for tests and status lines.
    public var linkCount: Int { links.count }

    // MARK: MQTTClientDelegate

    public func mqttClient(_ client: MQTTClient, connectedWithSessionPresent sessionPresent: Bool) {
        connected = true
        for handler in connectedHandlers { handler(sessionPresent) }
    }

    public func mqttClient(_ client: MQTTClient, disconnected reason: String) {
        connected = false
        logger.debug("broker connection lost; reconnecting", metadata: ["reason": "\(reason)"])
    }

    public func mqttClient(_ client: MQTTClient, received message: MQTTMessage) {
        guard message.topic == inbox else {
            for observer in observers where Self.matches(observer.filter, message.topic) { observer.handler(message) }
            return
        }
        guard let envelope = BrokerEnvelope(message.payload) else {
            logger.debug("ignored a message on the inbox that is not Baton's", metadata: ["bytes": "\(message.payload.readableBytes)"])
            return
        }
        if let link = links[envelope.sender + "/" + envelope.sessionKey] {
            link.received(envelope)
        } else if envelope.kind == .hello, let replyTo = message.properties.responseTopic {
            helloHandler?(envelope, replyTo)
        }
        // Anything else is for a link that is gone, or was never here: nothing to say to it.
    }

    /// Whether MQTT topic filter `filter` (`+` and `#` wildcards) matches `topic`.
    static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in f.enumerated() {
            if level == "#" { return true }
            guard index < t.count else { return false }
            if level != "+" && level != t[index] { return false }
        }
        return f.count == t.count
    }
}

/// Why a broker link could not be made or went on no longer.
public enum BrokerLinkError: Error, Sendable, CustomStringConvertible {
    /// Nobody listens on the device's inbox: it is offline (the broker said so in its PUBACK).
    case offline(String)
    /// The broker or the peer said no.
    case refused(String)
    case closed(String)

    public var description: String {
        switch self {
        case .offline(let text), .refused(let text), .closed(let text): text
        }
    }
}
