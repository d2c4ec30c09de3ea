import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One account across two bridged mosquittos, as a household with a broker at home bridged to
/// one in the cloud: an agent on the home broker, a client on the cloud one, no route between
/// their networks.
@Suite("Broker bridge", .timeLimit(.minutes(2)))
struct BrokerBridgeTests {
    /// An app whose launch writes the URI to `@DIR@/launched`.
    static let config = """
        app{ id = "org.test.bridge", name = "Bridge", schemes = { "bridge" },
             launch = function(uri, data)
               local f = assert(io.open("@DIR@/launched", "w"))
               f:write(uri)
               f:close()
             end }
        """

    @Test("an agent on the home broker is listed (transport cloud, route broker:ID) and launched on by a client on the bridged cloud broker")
    func discoveryAndLaunchAcrossTheBridge() async throws {
        try await BrokerNetwork.with { net in
            let (home, cloud) = try await net.startBridgedPair()
            let agent = try await net.agent(
                in: net.a, name: "Holiday flat \(NamespaceSpawner.tag())", config: Self.config, arguments: ["--broker", home.url, "--no-mdns"])

            let watcher = try net.watcher(in: net.b, ["--broker", cloud.url])
            let (_, added) = try await watcher.waitFor("the agent on the home broker") { $0.event == "added" && $0.id == agent.id }
            #expect(added["transport"] == "cloud", "\(added)")
            #expect(added.name == agent.name, "the name learnt over the sealed link: \(added)")

            let listed = try await net.baton(in: net.b, ["devices", "--json", "--broker", cloud.url])
            #expect(listed.code == 0, "\(listed)")
            let entry = listed.json()?.arrayValue?.first { $0["id"]?.stringValue == agent.id }
            let device = try #require(entry, "\(listed)")
            #expect(device["transport"]?.stringValue == "cloud", "\(listed)")
            #expect(device["name"]?.stringValue == agent.name, "\(listed)")
            let routes = device["routes"]?.arrayValue ?? []
            #expect(routes.count == 1 && routes.first?["kind"]?.stringValue == "broker" && routes.first?["device"]?.stringValue == agent.id, "\(listed)")

            let launch = try await net.baton(in: net.b, ["launch", agent.id, "bridge:from-the-cloud", "--broker", cloud.url])
            #expect(launch.code == 0, "\(launch)")
            #expect(agent.home.read("launched") == "bridge:from-the-cloud", "\(agent.log)")
            // By name too, as a user types it.
            let byName = try await net.baton(in: net.b, ["launch", agent.name, "bridge:by-name", "--broker", cloud.url])
            #expect(byName.code == 0, "\(byName)")
            #expect(agent.home.read("launched") == "bridge:by-name", "\(agent.log)")
        }
    }
}
