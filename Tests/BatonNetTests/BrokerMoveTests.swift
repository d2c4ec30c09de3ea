import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A device that leaves home and comes back, as a watcher at home sees it: both devices reach
/// the account's broker all along (``BrokerNetwork``) and share a LAN (``BrokerNetwork/joinByLAN()``)
/// the test pulls and puts back. The watcher browses mDNS with a short `--liveness` (as
/// ``LinkPulledTests``) and watches the broker's presence: one entry for the device whatever
/// the sources, `local` while the LAN reaches it, `cloud` (the broker alone) while only the
/// broker does, and the move is an `updated`, never a `removed`.
@Suite("Broker move: a device that moves between the LAN and the broker is updated, never removed", .timeLimit(.minutes(4)))
struct BrokerMoveTests {
    /// The kinds of a watcher event's device's routes, in order (`tcp`, `broker`).
    static func routeKinds(_ event: WatchEvent) -> [String] {
        (event.object["device"]?["routes"]?.arrayValue ?? []).compactMap { $0["kind"]?.stringValue }
    }

    /// Whether `device` (an event's or a listing's JSON) is the agent on the LAN: `local`,
    /// available, its LAN address first, the broker after it.
    static func atHome(_ device: JSON?, _ agent: NamespacedAgent, _ net: BrokerNetwork) -> Bool {
        guard let device, device["id"]?.stringValue == agent.id else { return false }
        let routes = device["routes"]?.arrayValue ?? []
        return device["transport"]?.stringValue == "local" && device["status"]?.stringValue == "available"
            && routes.first?["address"]?.stringValue == "\(net.lanAddress(of: net.b)):\(agent.port)"
            && routes.contains { $0["kind"]?.stringValue == "broker" && $0["device"]?.stringValue == agent.id }
    }

    /// Whether `device` is the agent reached through the broker alone: `cloud`, available, one
    /// route, the broker's.
    static func away(_ device: JSON?, _ agent: NamespacedAgent) -> Bool {
        guard let device, device["id"]?.stringValue == agent.id else { return false }
        let routes = device["routes"]?.arrayValue ?? []
        return device["transport"]?.stringValue == "cloud" && device["status"]?.stringValue == "available"
            && routes.count == 1 && routes[0]["kind"]?.stringValue == "broker" && routes[0]["device"]?.stringValue == agent.id
    }

    @Test("the LAN pulled: updated to cloud, launched on through the broker; the LAN back: updated to local; one entry, never removed")
    func leavesTheLANAndComesBack() async throws {
        try await BrokerNetwork.with { net in
            try net.joinByLAN()
            let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
            let name = "Roaming Laptop \(DeviceNameTests.tag())"
            // `a` is the watcher's host, `b` the device that leaves: mDNS on the LAN and the broker.
            let agent = try await net.agent(
                in: net.b, config: MDNSFixtures.config(name: name, kind: "laptop"), arguments: ["--broker", broker.url])
            // --verbose: a failure's transcript then says what each source saw, and when.
            let watcher = try net.watcher(in: net.a, ["--liveness", "5s", "--broker", broker.url, "--verbose"])
            let mine = { (event: WatchEvent) in event.id == agent.id }

            // At home: seen by both sources, shown once, local.
            try await watcher.waitFor("\(name) local, with its LAN and broker routes", within: 60) {
                mine($0) && Self.atHome($0.object["device"], agent, net)
            }
            let first = watcher.events().first(where: mine)
            #expect(first?.event == "added", "\(watcher.transcript)")
            #expect(watcher.events().filter { mine($0) && $0.event == "added" }.count == 1, "\(watcher.transcript)")
            var listed: [JSON] = []
            _ = try await eventually(within: 30) {
                let listing = try await net.baton(in: net.a, ["devices", "--json", "--timeout", "10s", "--broker", broker.url])
                listed = (listing.json()?.arrayValue ?? []).filter { $0["id"]?.stringValue == agent.id }
                return listed.count > 1 || Self.atHome(listed.first, agent, net)
            }
            #expect(listed.count == 1 && Self.atHome(listed.first, agent, net), "one entry for the device, local: \(listed)")

            // A liveness window first (three checks), as a device at home for a while: one that
            // never answered a check on the LAN is what a stranger's advertisement looks like to
            // mDNS, and is given up on there for minutes.
            try await Task.sleep(for: .seconds(5))

            // The LAN pulled: the broker alone reaches it.
            let beforePull = watcher.count
            try net.setLAN(net.b, up: false)
            let moved = try await watcher.waitFor("\(name) updated to cloud", from: beforePull, within: 30) {
                mine($0) && Self.away($0.object["device"], agent)
            }
            #expect(moved.event.event == "updated", "\(watcher.transcript)")
            let mark = agent.log.count
            let launched = try await net.baton(in: net.a, ["launch", name, "media:away", "--broker", broker.url])
            #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            let served = DirectLinkTests.served(String(agent.log.dropFirst(mark))).filter { $0.message == "launched" }
            #expect(served.map(\.uri) == ["media:away"], "\(agent.log)")
            #expect(served.allSatisfy { $0.peer.hasPrefix("broker:") }, "the launch came through the broker: \(agent.log)")

            // Away all along: nothing said it was back home meanwhile.
            let beforePlug = watcher.count
            let whileAway = watcher.events()[(moved.index + 1)..<beforePlug].filter(mine)
            #expect(whileAway.allSatisfy { $0.event == "updated" && Self.away($0.object["device"], agent) }, "\(watcher.transcript)")

            // The LAN back: local again.
            try net.setLAN(net.b, up: true)
            let back = try await watcher.waitFor("\(name) updated to local", from: beforePlug, within: 30) {
                mine($0) && Self.atHome($0.object["device"], agent, net)
            }
            #expect(back.event.event == "updated", "\(watcher.transcript)")

            let events = watcher.events().filter(mine)
            #expect(!events.contains { $0.event == "removed" }, "the move removed the device: \(watcher.transcript)")
            #expect(events.filter { $0.event == "added" }.count == 1, "\(watcher.transcript)")
            #expect(agent.isRunning, "\(agent.log)")
        }
    }
}
