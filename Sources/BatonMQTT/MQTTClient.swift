import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// An MQTT 5 client on one event loop: connects, keeps the connection alive, reconnects with
/// full-jitter backoff until stopped, re-subscribes after every reconnect, and holds QoS 1
/// publishes made while disconnected until the broker is back.
///
/// All state lives on `eventLoop` and is touched only there (no locks); the public methods
/// may be called from anywhere and hop onto the loop.
public final class MQTTClient: @unchecked Sendable {
    public let configuration: Configuration
    public let eventLoop: any EventLoop
    let logger: Logger

    /// Told of connections, messages and losses, on `eventLoop`. Held weakly.
    public weak var delegate: (any MQTTClientDelegate)?

    struct PendingPublish {
        var message: MQTTMessage
        var promise: EventLoopPromise<MQTTPubAck>
        var sequence: Int
        /// The packet id it went out under, kept while unacknowledged: a session the broker
        /// kept must see it again under the same id (MQTT 5 §4.4).
        var packetID: UInt16?
    }

    struct SubscribeWaiter {
        var filters: [String]
        var promise: EventLoopPromise<[UInt8]>
    }

    struct SubscribeRequest {
        var sent: [String]
        var waiters: [SubscribeWaiter]
    }

    // Event loop state.
    var machine: MQTTReconnectStateMachine
    var generation = 0
    var channel: (any Channel)?
    var connected = false
    var sslContext: NIOSSLContext?
    var nextPacketID: UInt16 = 0
    var nextSequence = 0
    var inflight: [UInt16: PendingPublish] = [:]
    var queue = CircularBuffer<PendingPublish>()
    /// The broker's Receive Maximum: QoS 1 publishes in flight at once.
    var sendQuota = 65_535
    var brokerMaximumPacketSize = Int(UInt32.max)
    /// What the client is subscribed to, in the order asked, re-sent after each reconnect.
    var subscriptions: [MQTTSubscription] = []
    var subscribing: [UInt16: SubscribeRequest] = [:]
    var waitingSubscribers: [SubscribeWaiter] = []
    var unsubscribing: [UInt16: EventLoopPromise<Void>] = [:]
    var connectTimeoutTask: Scheduled<Void>?
    var reconnectTask: Scheduled<Void>?
    var keepAliveTask: RepeatedTask?
    var pingDeadlineTask: Scheduled<Void>?

    /// `logger` gets the client id in its metadata.
    public init(configuration: Configuration, eventLoop: any EventLoop, logger: Logger) {
        self.configuration = configuration
        self.eventLoop = eventLoop
        var logger = logger
        logger[metadataKey: "mqtt-client"] = "\(configuration.clientID)"
        self.logger = logger
        machine = MQTTReconnectStateMachine(base: configuration.reconnectBackoffBase, cap: configuration.reconnectBackoffCap)
    }

    /// Connects, and after any loss connects again (with backoff) until `stop`.
    public func start() {
        onLoop {
            guard self.machine.stopped else { return }
            self.machine.start()
            self.connect()
        }
    }

    /// True between a successful CONNACK and the connection's end. Read on `eventLoop`.
    public var isConnected: Bool {
        eventLoop.preconditionInEventLoop()
        return connected
    }

    /// QoS 1: completes with the broker's PUBACK, whatever its reason code. While
    /// disconnected it waits (at most `maximumQueuedPublishes` of them) and goes out after
    /// the reconnect. QoS 0: completes once written, fails when not connected. Fails with
    /// `MQTTError` when the client stops, the queue is full or the packet is too large.
    public func publish(_ message: MQTTMessage) -> EventLoopFuture<MQTTPubAck> {
        onLoopFuture { self.publishOnLoop(message) }
    }

    /// Subscribes and completes with the SUBACK's reason codes, one per subscription. The
    /// subscriptions are made again after every reconnect. Before a connection, it waits.
    public func subscribe(_ subscriptions: [MQTTSubscription]) -> EventLoopFuture<[UInt8]> {
        onLoopFuture { self.subscribeOnLoop(subscriptions) }
    }

    /// Forgets the filters (no re-subscribe later) and tells the broker if connected.
    public func unsubscribe(_ filters: [String]) -> EventLoopFuture<Void> {
        onLoopFuture { self.unsubscribeOnLoop(filters) }
    }

    /// Sends DISCONNECT (0x00, or 0x04 so the broker still publishes the will), closes, and
    /// fails whatever still waits with `MQTTError.Kind.stopped`. No reconnect after it.
    public func stop(disconnectWithWill: Bool = false) -> EventLoopFuture<Void> {
        onLoopFuture { self.stopOnLoop(disconnectWithWill: disconnectWithWill) }
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if eventLoop.inEventLoop { body() } else { eventLoop.execute(body) }
    }

    private func onLoopFuture<T: Sendable>(_ body: @escaping @Sendable () -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        eventLoop.inEventLoop ? body() : eventLoop.flatSubmit(body)
    }
}
