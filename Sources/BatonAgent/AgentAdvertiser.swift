import BatonCore
import BatonDiscovery
import Logging
import NIOCore
import NIOPosix

/// Advertises an agent on the LAN as a `_baton._tcp` DNS-SD instance named after its device,
/// with the TXT record of ``DeviceAdvertisement``, and says goodbye when stopped.
///
/// A name already taken on the network is renamed as RFC 6762 §9 says (`Living Room TV (2)`);
/// the agent then goes by that name, in Describe answers too, so that every client sees one name,
/// and goes back to its own once the responder has taken it back (the conflict over).
public final class AgentAdvertiser: Sendable {
    /// The responder; its ``MDNSResponder/instanceName`` is the name advertised now.
    public let responder: MDNSResponder
    private let transport: MDNSTransport

    private init(responder: MDNSResponder, transport: MDNSTransport) {
        self.responder = responder
        self.transport = transport
    }

    /// Opens the mDNS sockets on the agent's loop and starts probing for the device's name. The
    /// future succeeds once the sockets are open; probing and announcing go on from there, and a
    /// rename is applied to the agent's device and logged. Fails if port 5353 cannot be used.
    public static func start(
        agent: Agent, port: Int, account: String = "", configuration: MDNSTransport.Configuration = MDNSTransport.Configuration(),
        timing: MDNSResponder.Timing = MDNSResponder.Timing(), logger: Logger
    ) -> EventLoopFuture<AgentAdvertiser> {
        let loop = agent.runtime.eventLoop
        return MDNSTransport.start(configuration: configuration, on: loop, logger: logger).flatMapThrowing { transport in
            let device = agent.configuration.device
            let asked = device.name
            let responder = MDNSResponder(
                instanceName: device.name, port: UInt16(port),
                txt: DeviceAdvertisement.txt(for: device, account: account), transport: transport, timing: timing,
                logger: logger)
            let advertiser = AgentAdvertiser(responder: responder, transport: transport)
            responder.start().whenSuccess { name in
                advertiser.adopt(name, asked: asked, agent: agent, logger: logger)
                logger.info("advertised over mDNS", metadata: ["name": "\(name)", "port": "\(port)"])
            }
            let changes = responder.nameChanges
            Task {
                for await name in changes {
                    loop.execute { advertiser.adopt(name, asked: asked, agent: agent, logger: logger) }
                }
            }
            return advertiser
        }
    }

    /// Takes the advertised name as the device's own: another after a conflict (`asked` being
    /// the one configured), or `asked` again once the conflict is over.
    private func adopt(_ name: String, asked: String, agent: Agent, logger: Logger) {
        let current = agent.configuration.device.name
        guard name != current else { return }
        if name == asked || name == responder.preferredName {
            logger.notice(
                "name free on the network again; going by it", metadata: ["name": "\(name)", "was": "\(current)"])
        } else {
            logger.warning(
                "name taken on the network; going by another", metadata: ["asked": "\(asked)", "now": "\(name)"])
        }
        agent.override(name: name, kind: nil)
    }

    /// Sends the goodbye (TTL 0) for every record and closes the sockets.
    public func stop() -> EventLoopFuture<Void> {
        let transport = transport
        return responder.stop().flatMap { transport.close() }
    }

    /// The interfaces to advertise on for an agent listening on `host`: nil (all) for a
    /// wildcard address, else the names of the interfaces that hold the address, empty when
    /// none does (loopback, or a name).
    public static func interfaces(forListening host: String) -> Set<String>? {
        if ["0.0.0.0", "::", "*"].contains(host) { return nil }
        guard let wanted = try? SocketAddress(ipAddress: host, port: 0),
              let devices = try? System.enumerateDevices() else { return [] }
        return Set(devices.filter { device in device.address.map { sameHost($0, wanted) } ?? false }.map(\.name))
    }

    private static func sameHost(_ a: SocketAddress, _ b: SocketAddress) -> Bool {
        a.protocol == b.protocol && a.ipAddress == b.ipAddress
    }
}
