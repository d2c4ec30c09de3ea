import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the mDNS tests' agents are: a device, and a player app whose launch function appends
/// the URI to `launched` in the agent's home.
enum MDNSFixtures {
    static let player = "org.test.player"

    static func config(name: String, kind: String, model: String = "", manufacturer: String = "") -> String {
        #"""
        device{ name = "\#(name)", kind = "\#(kind)", model = "\#(model)", manufacturer = "\#(manufacturer)" }
        app{ id = "\#(player)", name = "Player", schemes = { "media" },
             launch = function(uri)
               local f = assert(io.open("@DIR@/launched", "a"))
               f:write(uri, "\n")
               f:close()
               return "success"
             end }
        """#
    }

    /// Runs `baton devices --json ARGS` in `namespace` until it lists exactly the devices `ids`
    /// (a run on a busy machine may end its query window before a slow answer is in; a user
    /// would look again), at most five times; the devices of the last run, by id. A different
    /// list every time fails the test.
    @discardableResult
    static func devices(
        _ pair: NamespacePair, in namespace: String, _ arguments: [String] = [], expecting ids: Set<String>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String: JSON] {
        var last: (CLIResult, [String: JSON])?
        for _ in 0..<5 {
            let result = try await pair.baton(in: namespace, ["devices", "--json"] + arguments, sourceLocation: sourceLocation)
            guard result.code == 0, case .array(let list)? = try? JSON.parse(result.stdout) else {
                Issue.record("baton devices --json \(arguments.joined(separator: " ")) failed:\n\(result)", sourceLocation: sourceLocation)
                return [:]
            }
            var byID: [String: JSON] = [:]
            for device in list { byID[device["id"]?.stringValue ?? "?"] = device }
            last = (result, byID)
            if Set(byID.keys) == ids && byID.count == list.count { return byID }
        }
        Issue.record(
            "baton devices --json \(arguments.joined(separator: " ")) in \(namespace) listed \(last?.1.keys.sorted() ?? []), expected \(ids.sorted()):\n\(last?.0.description ?? "")",
            sourceLocation: sourceLocation)
        return last?.1 ?? [:]
    }

    /// Waits until every agent has finished probing and says which name it advertises, which
    /// must be `names` in order.
    @discardableResult
    static func waitAdvertised(_ agents: [NamespacedAgent], as names: [String]? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String] {
        var advertised: [String] = []
        for agent in agents {
            guard let name = await agent.advertisedName() else {
                throw NamespacePair.Failure("agent \(agent.name) (\(agent.address)) never said it was advertised over mDNS; its log:\n\(agent.log)")
            }
            advertised.append(name)
        }
        if let names { #expect(advertised == names, sourceLocation: sourceLocation) }
        return advertised
    }
}

/// Real `baton agent` processes advertising themselves over real multicast, in two private
/// network namespaces, and real `baton devices`, `describe` and `launch` processes finding them
/// by name: what a user on a LAN sees.
@Suite("mDNS discovery between processes in network namespaces", .timeLimit(.minutes(3)))
struct MDNSDiscoveryTests {
    @Test("every agent on both hosts is listed with its name, kind, platform, model, maker, id and a working address")
    func everyAgentIsListed() async throws {
        try await NamespacePair.with { pair in
            async let tv = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv", model: "X-900", manufacturer: "Example"))
            async let speaker = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Kitchen Speaker", kind: "speaker", model: "S1", manufacturer: "Sono"))
            async let phone = pair.agent(in: pair.b, config: MDNSFixtures.config(name: "Pocket", kind: "phone", model: "P7", manufacturer: "Fruit"))
            // No configuration file: the command line names it; no model or maker.
            async let desktop = pair.agent(in: pair.b, name: "Study PC", kind: "desktop")
            let agents = try await [tv, speaker, phone, desktop]
            let expected: [(name: String, kind: String, model: String, manufacturer: String)] = [
                ("Living Room TV", "tv", "X-900", "Example"), ("Kitchen Speaker", "speaker", "S1", "Sono"),
                ("Pocket", "phone", "P7", "Fruit"), ("Study PC", "desktop", "", ""),
            ]
            try await MDNSFixtures.waitAdvertised(agents, as: expected.map(\.name))
            #expect(Set(agents.map(\.id)).count == 4, "each agent has a device id of its own")

            for namespace in [pair.a, pair.b] {
                let listed = try await MDNSFixtures.devices(pair, in: namespace, expecting: Set(agents.map(\.id)))
                for (agent, want) in zip(agents, expected) {
                    guard let device = listed[agent.id] else { continue }
                    #expect(device["name"] == .string(want.name), "\(device.serialized())")
                    #expect(device["kind"] == .string(want.kind), "\(device.serialized())")
                    #expect(device["platform"] == .string("linux"), "\(device.serialized())")
                    #expect(device["model"] == .string(want.model), "\(device.serialized())")
                    #expect(device["manufacturer"] == .string(want.manufacturer), "\(device.serialized())")
                    #expect(device["address"] == .string(agent.address), "\(device.serialized())")
                    #expect(device["addresses"]?.arrayValue?.contains(.string(agent.address)) == true, "\(device.serialized())")
                    #expect(device["transport"] == .string("local"), "\(device.serialized())")
                    #expect(device["status"] == .string("available"), "\(device.serialized())")
                    #expect(device["sources"] == .array([.string("mdns")]), "\(device.serialized())")
                }
            }

            // The table a user reads.
            let table = try await pair.baton(in: pair.b, ["devices"])
            #expect(table.code == 0 && table.stdout.hasPrefix("NAME"), "\(table)")
            for agent in agents {
                #expect(table.stdout.contains(agent.name) && table.stdout.contains(agent.id) && table.stdout.contains(agent.address), "\(table)")
            }

            // The addresses work: each agent is reached by its name from the other host.
            for agent in agents {
                let other = agent.namespace == pair.a ? pair.b : pair.a
                let described = try await pair.baton(in: other, ["describe", agent.name, "--json"])
                #expect(described.code == 0, "\(described)")
                let object = try? JSON.parse(described.stdout)
                #expect(object?["device"]?["id"] == .string(agent.id), "\(described)")
                #expect(object?["device"]?["name"] == .string(agent.name), "\(described)")
                #expect(object?["address"] == .string(agent.address), "\(described)")
            }
            let launched = try await pair.baton(in: pair.b, ["launch", "Living Room TV", "media:film", "--app", MDNSFixtures.player])
            #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            #expect(agents[0].home.read("launched") == "media:film\n")
        }
    }

    @Test("a watcher prints added, updated, removed, enumeration_completed and error")
    func everyEventKind() async throws {
        try await NamespacePair.with { pair in
            // Port 9 of the other host refuses connections: an error event, then enumeration
            // completes all the same. --status any: a device that stops answering is updated
            // (unavailable), never removed, so only a goodbye removes one here.
            let watcher = try pair.watcher(in: pair.b, ["--status", "any", "--peer", "10.77.0.1:9", "--connect-timeout", "2s"])
            let error = try await watcher.waitFor("an error event") { $0.event == "error" }
            #expect(error.event.message?.contains("peer 10.77.0.1:9 cannot be reached") == true, "\(error.event)")
            try await watcher.waitFor("enumeration_completed") { $0.event == "enumeration_completed" }

            let home = try AgentHome(in: pair.directory)
            let first = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Changing", kind: "tv", model: "M1"), home: home)
            let added = try await watcher.waitFor("added Changing") { $0.event == "added" && $0.id == first.id }
            #expect(added.event.name == "Changing" && added.event["kind"] == "tv" && added.event["model"] == "M1", "\(added.event)")
            #expect(added.event["address"] == first.address, "\(added.event)")

            // The same device (same home, same id) back at once on another port, as another
            // kind and model, without a goodbye in between: updated.
            let mark = watcher.count
            await first.stop(SIGKILL)
            let second = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Changing", kind: "speaker", model: "M2"), home: home)
            #expect(second.id == first.id)
            let updated = try await watcher.waitFor("updated Changing as a speaker", from: mark) {
                $0.event == "updated" && $0.id == second.id && $0["model"] == "M2"
            }
            #expect(updated.event["kind"] == "speaker" && updated.event["address"] == second.address, "\(updated.event)")
            #expect(!watcher.events()[mark...].contains { $0.event == "removed" || $0.event == "added" }, "\(watcher.transcript)")

            // A goodbye: removed.
            #expect(await second.stop(SIGTERM) == 0, "\(second.log)")
            let removed = try await watcher.waitFor("removed Changing", from: updated.index) { $0.event == "removed" && $0.id == second.id }
            #expect(removed.event.name == "Changing", "\(removed.event)")
            #expect(watcher.events().filter { $0.event == "enumeration_completed" }.count == 1, "\(watcher.transcript)")
        }
    }

    @Test("filters: kinds are alternatives, different filters must all match; transport, status and authorization")
    func filters() async throws {
        try await NamespacePair.with { pair in
            async let tvAgent = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Den TV", kind: "tv"))
            async let speakerAgent = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Den Speaker", kind: "speaker"))
            async let phoneAgent = pair.agent(in: pair.b, config: MDNSFixtures.config(name: "Den Phone", kind: "phone"))
            let agents = try await [tvAgent, speakerAgent, phoneAgent]
            let tv = agents[0], speaker = agents[1], phone = agents[2]
            try await MDNSFixtures.waitAdvertised([tv, speaker, phone])
            // A TV of another account (python-zeroconf advertises it, at the phone's agent).
            let other = try pair.python(in: pair.b, MDNSInteropScripts.register, [
                "Other Account TV", "10.77.0.2", String(phone.port), "id=other-account-tv", "kind=tv", "platform=linux", "v=1",
                "acct=someone-else",
            ])
            try await other.waitForLine("REGISTERED") { $0 == "REGISTERED" }

            // Watchers first: once the anonymous one has seen all four, each list below is complete.
            let everything = try pair.watcher(in: pair.a, ["--authorization", "anonymous"])
            let tvs = try pair.watcher(in: pair.a, ["--kind", "tv"])
            let all = [tv.id, speaker.id, phone.id, "other-account-tv"]
            for id in all { try await everything.waitFor("added \(id)") { $0.event == "added" && $0.id == id } }
            try await tvs.waitFor("added Den TV") { $0.event == "added" && $0.id == tv.id }
            try await tvs.waitFor("enumeration_completed") { $0.event == "enumeration_completed" }

            let mine: Set = [tv.id, speaker.id, phone.id]
            try await MDNSFixtures.devices(pair, in: pair.a, [], expecting: mine)
            try await MDNSFixtures.devices(pair, in: pair.a, ["--kind", "tv", "--kind", "speaker"], expecting: [tv.id, speaker.id])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--kind", "tv", "--platform", "linux"], expecting: [tv.id])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--kind", "tv", "--platform", "android"], expecting: [])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--platform", "linux", "--platform", "windows"], expecting: mine)
            try await MDNSFixtures.devices(pair, in: pair.a, ["--platform", "macos"], expecting: [])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--transport", "local"], expecting: mine)
            try await MDNSFixtures.devices(pair, in: pair.a, ["--transport", "cloud"], expecting: [])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--transport", "any", "--status", "any"], expecting: mine)
            try await MDNSFixtures.devices(pair, in: pair.a, ["--authorization", "same_account"], expecting: mine)
            let anonymous = try await MDNSFixtures.devices(pair, in: pair.a, ["--authorization", "anonymous"], expecting: Set(all))
            #expect(anonymous["other-account-tv"]?["account"] == .string("someone-else"))
            #expect(anonymous["other-account-tv"]?["address"] == .string(phone.address))
            try await MDNSFixtures.devices(pair, in: pair.a, ["--authorization", "anonymous", "--kind", "tv"], expecting: [tv.id, "other-account-tv"])
            try await MDNSFixtures.devices(pair, in: pair.a, ["--authorization", "anonymous", "--kind", "tv", "--transport", "cloud"], expecting: [])
            #expect(tvs.events().allSatisfy { $0.id == nil || $0.id == tv.id }, "\(tvs.transcript)")

            try await Self.stopsAnswering(speaker, pair)
        }
    }

    /// A device that stops answering (`speaker`, killed): gone for watchers of available
    /// devices, shown as unavailable with --status any.
    private static func stopsAnswering(_ speaker: NamespacedAgent, _ pair: NamespacePair) async throws {
        let available = try pair.watcher(in: pair.a, ["--liveness", "2s"])
        let anyStatus = try pair.watcher(in: pair.a, ["--liveness", "2s", "--status", "any"])
        try await available.waitFor("added Den Speaker") { $0.event == "added" && $0.id == speaker.id }
        try await anyStatus.waitFor("added Den Speaker") { $0.event == "added" && $0.id == speaker.id }
        let availableMark = available.count, anyMark = anyStatus.count
        await speaker.stop(SIGKILL)
        try await available.waitFor("removed Den Speaker", from: availableMark) { $0.event == "removed" && $0.id == speaker.id }
        let unavailable = try await anyStatus.waitFor("Den Speaker unavailable", from: anyMark) { $0.id == speaker.id && $0["status"] == "unavailable" }
        #expect(unavailable.event.event == "updated", "\(anyStatus.transcript)")
        #expect(!anyStatus.events()[anyMark...].contains { $0.event == "removed" && $0.id == speaker.id }, "\(anyStatus.transcript)")
    }

    @Test("two agents of one name: one becomes NAME (2), goes by it, and is reached by it")
    func nameConflict() async throws {
        try await NamespacePair.with { pair in
            // At the same time, one on each host: they probe against each other.
            async let first = pair.agent(in: pair.a, name: "Twin", kind: "tv")
            async let second = pair.agent(in: pair.b, name: "Twin", kind: "tv")
            let agents = try await [first, second]
            let names = try await MDNSFixtures.waitAdvertised(agents)
            #expect(Set(names) == ["Twin", "Twin (2)"], "\(names); logs:\n\(agents[0].log)\n\(agents[1].log)")
            guard let renamedIndex = names.firstIndex(of: "Twin (2)"), let keptIndex = names.firstIndex(of: "Twin") else { return }
            let renamed = agents[renamedIndex], kept = agents[keptIndex]
            #expect(renamed.log.contains("name taken on the network; going by another"), "\(renamed.log)")

            for namespace in [pair.a, pair.b] {
                let listed = try await MDNSFixtures.devices(pair, in: namespace, expecting: [renamed.id, kept.id])
                #expect(listed[renamed.id]?["name"] == .string("Twin (2)"))
                #expect(listed[kept.id]?["name"] == .string("Twin"))

                let described = try await pair.baton(in: namespace, ["describe", "Twin (2)", "--json"])
                #expect(described.code == 0, "\(described)")
                let object = try? JSON.parse(described.stdout)
                #expect(object?["device"]?["id"] == .string(renamed.id), "\(described)")
                // The agent itself goes by the new name.
                #expect(object?["device"]?["name"] == .string("Twin (2)"), "\(described)")
                #expect(object?["address"] == .string(renamed.address), "\(described)")

                let original = try await pair.baton(in: namespace, ["describe", "Twin", "--json"])
                #expect(original.code == 0, "\(original)")
                #expect((try? JSON.parse(original.stdout))?["device"]?["id"] == .string(kept.id), "\(original)")
            }
        }
    }
}
