import BatonBroker
import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// An agent on the account's broker: its own broker connection (client id `baton-DEVICE`, a
/// delayed will saying `offline`), a listener that serves sealed links through it as the TCP
/// listener serves its callers, and its presence, signed and refreshed. What it says of the
/// device comes from the agent (its name is never on the broker; see ``PresenceRecord``).
struct AgentBroker {
    let hub: BrokerHub
    let presence: PresencePublisher

    /// How long the broker keeps the agent's session after the connection drops: longer than
    /// the will's delay (mosquitto cuts a will's delay to it), so a short flap sends no will.
    static let sessionExpiry: UInt32 = 30

    /// Starts, on the server's loop: connects (in the background: an agent whose broker is down
    /// serves the LAN, and joins the broker when it comes), serves links and says presence.
    static func start(
        settings: BrokerSettings, device: DeviceInfo, server: AgentServer, trustStore: TrustStore, limits: FrameLimits,
        endpoints: [RemoteDevice.Endpoint], logger: Logger
    ) throws -> AgentBroker {
        let credentials = trustStore.credentials
        let epoch = PresencePublisher.newEpoch()
        let hub = try BrokerHub(
            endpoint: try BrokerAccess.endpoint(settings, credentials: credentials), role: .agent, trustStore: trustStore,
            will: try PresencePublisher.will(for: device, credentials: credentials, epoch: epoch), sessionExpiry: sessionExpiry,
            eventLoop: server.policy.eventLoop, logger: logger)
        server.attach(BrokerListener(hub: hub, limits: limits, logger: logger)).whenComplete { result in
            switch result {
            case .success: logger.info("serving through the broker", metadata: ["broker": "\(settings.url)"])
            case .failure(let error): logger.error("cannot serve through the broker", metadata: ["broker": "\(settings.url)", "error": "\(error)"])
            }
        }
        // Presence says only what does not change while the agent runs (id, kind, platform).
        let presence = PresencePublisher(hub: hub, credentials: credentials, epoch: epoch, logger: logger) { (device, endpoints) }
        presence.start()
        return AgentBroker(hub: hub, presence: presence)
    }

    /// Where an agent listening on `host` (an address, or the wildcard) and `port` is reached:
    /// the address itself, or every non-loopback address of the machine's interfaces.
    static func endpoints(listening host: String, port: Int) -> [RemoteDevice.Endpoint] {
        guard host == "0.0.0.0" || host == "::" else { return [RemoteDevice.Endpoint(host: host, port: port)] }
        let devices = (try? System.enumerateDevices()) ?? []
        let addresses = devices.compactMap { device -> String? in
            guard let address = device.address, let ip = address.ipAddress, !ip.hasPrefix("127."), ip != "::1",
                  !ip.lowercased().hasPrefix("fe80") else { return nil }
            return ip
        }
        return Array(Set(addresses)).sorted().prefix(8).map { RemoteDevice.Endpoint(host: $0, port: port) }
    }

    /// Says `leaving` (watchers drop the device at once), waiting a second at most for the
    /// broker to take it.
    func leave() {
        let loop = hub.eventLoop
        let done = loop.makePromise(of: Void.self)
        let timer = loop.scheduleTask(in: .seconds(1)) { done.succeed(()) }
        presence.stop().whenComplete { _ in
            timer.cancel()
            done.succeed(())
        }
        _ = try? done.futureResult.wait()
    }

    /// Disconnects, after the server drained the links.
    func stop() {
        _ = try? hub.stop().wait()
    }
}
