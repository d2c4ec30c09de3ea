import BatonCore
import BatonMQTT
import BatonSecurity
import Logging
import NIOCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An agent's presence on the broker: signed and retained, republished on every CONNACK and
/// every third of its lease (the message expires with the lease, so a device nobody refreshes
/// leaves the broker by itself), `leaving` when the agent stops. Its will (``will(for:)``)
/// says `offline`, delayed, so a flap shorter than the delay says nothing.
public final class PresencePublisher: @unchecked Sendable {
    /// How long presence holds without a refresh.
    public static let lease = 60
    /// How long the broker waits before it publishes the will of a client that vanished: a
    /// reconnect within it cancels the will.
    public static let willDelay: UInt32 = 5

    let hub: BrokerHub
    let credentials: DeviceCredentials
    private let describe: () -> (DeviceInfo, [RemoteDevice.Endpoint])
    /// This run's epoch: a will of an earlier run is older.
    public let epoch: Int64
    private var refresh: RepeatedTask?
    private let logger: Logger

    /// A publisher for the agent behind `hub`, saying what `describe` gives (its details and TCP
    /// endpoints) under `epoch` (the value ``will(for:credentials:epoch:)`` was made with).
    public init(
        hub: BrokerHub, credentials: DeviceCredentials, epoch: Int64, logger: Logger,
        describe: @escaping () -> (DeviceInfo, [RemoteDevice.Endpoint])
    ) {
        self.hub = hub
        self.credentials = credentials
        self.epoch = epoch
        self.describe = describe
        self.logger = logger
    }

    /// A new epoch: now, in ms.
    public static func newEpoch() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The will an agent's MQTT client leaves with the broker: `offline` under `epoch`, retained,
    /// published ``willDelay`` seconds after the agent vanished.
    public static func will(for info: DeviceInfo, credentials: DeviceCredentials, epoch: Int64) throws -> MQTTWill {
        let topics = BrokerTopics(account: credentials.fingerprint.hex)
        let topic = topics.presence(credentials.deviceID)
        let record = PresenceRecord(info: info, epoch: epoch, state: .offline, lease: lease)
        return MQTTWill(message: try message(record, topic: topic, credentials: credentials), delayInterval: willDelay)
    }

    private static func message(_ record: PresenceRecord, topic: String, credentials: DeviceCredentials) throws -> MQTTMessage {
        var properties = MQTTPublishProperties()
        properties.messageExpiryInterval = UInt32(record.lease)
        var payload = ByteBuffer()
        payload.writeBytes(try record.signed(for: topic, by: credentials))
        return MQTTMessage(topic: topic, payload: payload, qos: .atLeastOnce, retain: true, properties: properties)
    }

    /// Publishes now, on every CONNACK, and every third of the lease.
    public func start() {
        hub.eventLoop.execute { [self] in
            hub.onConnected { [weak self] _ in self?.publish(.online) }
            let interval = TimeAmount.seconds(Int64(Self.lease / 3))
            refresh = hub.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
                self?.publish(.online)
            }
        }
    }

    /// Says `leaving` (the future completes when the broker has it, or failed to), and stops
    /// refreshing.
    public func stop() -> EventLoopFuture<Void> {
        hub.eventLoop.flatSubmit { [self] in
            refresh?.cancel()
            refresh = nil
            return publish(.leaving).map { _ in }.recover { _ in }
        }
    }

    @discardableResult
    private func publish(_ state: PresenceRecord.State) -> EventLoopFuture<MQTTPubAck> {
        let (info, endpoints) = describe()
        let record = PresenceRecord(info: info, endpoints: endpoints, epoch: epoch, state: state, lease: Self.lease)
        do {
            return hub.publish(try Self.message(record, topic: hub.topics.presence(hub.deviceID), credentials: credentials))
        } catch {
            logger.error("cannot sign presence", metadata: ["error": "\(error)"])
            return hub.eventLoop.makeFailedFuture(error)
        }
    }
}
