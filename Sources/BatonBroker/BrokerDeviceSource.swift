import BatonClient
import BatonCore
import BatonMQTT
import BatonSecurity
import Logging
import NIOCore

/// Devices of the account that are present on its broker: a ``DeviceSource`` fed by the signed,
/// retained presence of every agent (``PresenceRecord``), reached through the broker
/// (transport `cloud`, route ``DeviceRoute/broker(_:)``).
///
/// Presence names no device (the broker reads it): a device is reported once it described
/// itself over the sealed link (`describe`), which also proves it answers; one that does not is
/// asked again at its next presence.
///
/// What presence says is a hint (``PresenceRecord/verify(_:topic:device:trust:)`` keeps out
/// what is not signed by the account's own device for that topic); the sealed handshake proves
/// who answers. A device goes when it says `leaving`, when its lease runs out unrefreshed, or
/// when its will (`offline`) is confirmed: a will is only a suspicion, since mosquitto sends
/// every will when it is itself stopped; it stands once ``confirmation`` passed with this
/// watcher connected to the broker all along and no fresh presence heard.
public final class BrokerDeviceSource: DeviceSource, @unchecked Sendable {
    public let name = "broker"
    let hub: BrokerHub
    private weak var directory: (any DeviceSourceDelegate)?
    private let logger: Logger
    /// How long a will waits to be believed.
    let confirmation: TimeAmount
    /// How long after subscribing the first look is over at the latest.
    let enumeration: TimeAmount
    private var devices: [String: Seen] = [:]
    /// The newest epoch heard per device: anything older is a late will or a replay.
    private var epochs: [String: Int64] = [:]
    /// Presence refused (forged, another account's), logged once per topic.
    private var refused: Set<String> = []
    private var stopped = false
    /// Bumped when this watcher's broker connection comes back: a will pending across a
    /// reconnect is judged again from then on.
    private var connection = 0
    /// When the broker let this watcher in last.
    private var connectedSince: NIODeadline?
    /// How long a connection must have lasted before a will on it is believed.
    let steady: TimeAmount = .seconds(20)

    private let describe: (DeviceTarget) -> EventLoopFuture<DeviceInfo>

    private struct Seen {
        var record: PresenceRecord
        /// What the device said of itself over the link: nil until it did.
        var described: DeviceInfo?
        var describing = false
        var lease: Scheduled<Void>?
        var suspicion: Scheduled<Void>?
    }

    /// A source over `hub`'s broker connection, asking each device it sees to describe itself
    /// with `describe` (a client's, through the broker).
    public init(
        hub: BrokerHub, confirmation: TimeAmount = .seconds(2), enumeration: TimeAmount = .seconds(4), logger: Logger,
        describe: @escaping (DeviceTarget) -> EventLoopFuture<DeviceInfo>
    ) {
        self.hub = hub
        self.describe = describe
        self.confirmation = confirmation
        self.enumeration = enumeration
        self.logger = logger
    }

    public func start(reportingTo directory: any DeviceSourceDelegate) {
        hub.eventLoop.preconditionInEventLoop()
        logger.debug("watching presence on the broker", metadata: ["topic": "\(hub.topics.allPresence)"])
        self.directory = directory
        hub.onConnected { [weak self] _ in self?.reconnected() }
        hub.observe(hub.topics.allPresence) { [weak self] message in self?.heard(message) }.whenComplete { [self] result in
            switch result {
            case .failure(let error): self.directory?.source(self, problem: "the broker: \(error)")
            case .success(let codes): self.logger.debug("presence subscribed", metadata: ["codes": "\(codes)"])
            }
            // Retained presence comes right after the subscription; the first look is over
            // once what came has described itself (or at the latest after `enumeration`).
            hub.eventLoop.scheduleTask(in: .milliseconds(300)) { [weak self] in
                self?.presenceHeard = true
                self?.enumerateIfDone()
            }
            hub.eventLoop.scheduleTask(in: enumeration) { [weak self] in self?.enumerate() }
        }
    }

    private var presenceHeard = false
    private var enumerated = false

    private func enumerateIfDone() {
        if presenceHeard, !devices.values.contains(where: \.describing) { enumerate() }
    }

    private func enumerate() {
        guard !enumerated, !stopped else { return }
        enumerated = true
        directory?.sourceEnumerated(self)
    }

    public func stop() -> EventLoopFuture<Void> {
        stopped = true
        directory = nil
        for seen in devices.values {
            seen.lease?.cancel()
            seen.suspicion?.cancel()
        }
        devices = [:]
        return hub.eventLoop.makeSucceededVoidFuture()
    }

    private func reconnected() {
        connection += 1
        connectedSince = hub.eventLoop.now
        // Wills heard before are judged again from now: the broker may have been the one that
        // went (and sent every will as it stopped).
        for id in devices.keys where devices[id]?.suspicion != nil { suspect(id) }
    }

    private func heard(_ message: MQTTMessage) {
        guard !stopped, let (device, rest) = hub.topics.device(in: message.topic), rest == "presence" else { return }
        logger.debug("presence heard", metadata: ["device": "\(device)", "bytes": "\(message.payload.readableBytes)"])
        guard message.payload.readableBytes > 0 else { return lose(device, "its presence was cleared") }
        let record: PresenceRecord
        do {
            record = try PresenceRecord.verify(
                message.payload.readableBytesView, topic: message.topic, device: device, trust: hub.trustStore.trust)
        } catch {
            if refused.insert(message.topic).inserted {
                logger.warning("ignored presence that is not this account's device's", metadata: ["topic": "\(message.topic)", "why": "\(error)"])
            }
            return
        }
        if let newest = epochs[device], record.epoch < newest { return } // a late will of an earlier run
        epochs[device] = record.epoch
        switch record.state {
        case .online: see(device, record)
        case .leaving: lose(device, "it said it was leaving")
        case .offline:
            guard devices[device] != nil else { return }
            suspect(device)
        }
    }

    private func see(_ id: String, _ record: PresenceRecord) {
        hub.present(id)
        var seen = devices[id] ?? Seen(record: record)
        seen.suspicion?.cancel()
        seen.suspicion = nil
        seen.lease?.cancel()
        seen.lease = hub.eventLoop.scheduleTask(in: .seconds(Int64(record.lease))) { [weak self] in
            self?.lose(id, "its lease ran out")
        }
        let changed = seen.record.epoch != record.epoch || seen.record.info != record.info
        seen.record = record
        if changed { seen.described = nil }
        devices[id] = seen
        if let info = seen.described {
            if changed { report(id, info) }
        } else if !seen.describing {
            devices[id]?.describing = true
            let route = DeviceRoute.broker(BrokerRoute(account: hub.topics.account, deviceID: id))
            // Its endpoints too: once it answered through the broker, a direct link is tried.
            let target = DeviceTarget(deviceID: id, routes: [route], account: .ownAccount, directCandidates: record.endpoints)
            describe(target).hop(to: hub.eventLoop).whenComplete { [weak self] result in
                guard let self, !self.stopped, self.devices[id] != nil else { return }
                self.devices[id]?.describing = false
                defer { self.enumerateIfDone() }
                switch result {
                case .success(let info) where info.id.lowercased() == id:
                    self.devices[id]?.described = info
                    self.report(id, info)
                case .success(let info):
                    self.logger.warning("a device on the broker described itself as another", metadata: ["device": "\(id)", "said": "\(info.id)"])
                case .failure(let error):
                    self.logger.debug("a device on the broker did not describe itself", metadata: ["device": "\(id)", "error": "\(error)"])
                }
            }
        }
    }

    private func report(_ id: String, _ info: DeviceInfo) {
        guard let record = devices[id]?.record else { return }
        var device = device(record)
        device.info = info
        directory?.source(self, sees: device, as: key(id))
    }

    /// A will came: believe it once ``confirmation`` passed, on a connection to the broker
    /// that has lasted ``steady`` by then (after the broker itself came back, agents need a
    /// moment to say they are there again).
    private func suspect(_ id: String, after wait: TimeAmount? = nil) {
        guard var seen = devices[id] else { return }
        seen.suspicion?.cancel()
        let connection = self.connection
        seen.suspicion = hub.eventLoop.scheduleTask(in: wait ?? confirmation) { [weak self] in
            guard let self, self.connection == connection, self.hub.connected else { return }
            let settled = self.connectedSince.map { self.hub.eventLoop.now - $0 } ?? .zero
            if settled < self.steady { return self.suspect(id, after: self.steady - settled) }
            self.lose(id, "its will was published and nothing newer came")
        }
        devices[id] = seen
    }

    private func lose(_ id: String, _ why: String) {
        hub.gone(id)
        guard let seen = devices.removeValue(forKey: id) else { return }
        seen.lease?.cancel()
        seen.suspicion?.cancel()
        logger.debug("a device left the broker", metadata: ["device": "\(id)", "why": "\(why)"])
        directory?.source(self, lost: key(id))
    }

    private func key(_ id: String) -> String { "broker " + id }

    private func device(_ record: PresenceRecord) -> RemoteDevice {
        var device = RemoteDevice(
            info: record.info, routes: [.broker(BrokerRoute(account: hub.topics.account, deviceID: record.info.id))],
            transport: .cloud, status: .available, account: hub.topics.account, protocolVersion: record.protocolVersion,
            sources: [.broker])
        // Candidates, not routes: tried after the broker answered, never before it.
        device.directCandidates = record.endpoints
        return device
    }
}
