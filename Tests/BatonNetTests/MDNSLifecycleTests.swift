import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Agents that leave, crash, come back, or lose their network, as `baton devices --watch
/// --json` in the other namespace sees it.
@Suite("mDNS: agents coming and going, seen by watcher processes", .timeLimit(.minutes(3)))
struct MDNSLifecycleTests {
    @Test("SIGTERM: the agent says goodbye and the watcher prints removed")
    func goodbye() async throws {
        try await NamespacePair.with { pair in
            // A liveness window far longer than the test: only the goodbye can remove it.
            let watcher = try pair.watcher(in: pair.b, ["--liveness", "10m"])
            let agent = try await pair.agent(in: pair.a, name: "Leaving", kind: "speaker")
            let added = try await watcher.waitFor("added Leaving") { $0.event == "added" && $0.id == agent.id }
            #expect(added.event.name == "Leaving" && added.event["kind"] == "speaker", "\(added.event)")

            #expect(await agent.stop(SIGTERM) == 0, "\(agent.log)")
            let removed = try await watcher.waitFor("removed Leaving", from: added.index) { $0.event == "removed" }
            #expect(removed.event.id == agent.id && removed.event.name == "Leaving", "\(watcher.transcript)")
        }
    }

    @Test("kill -9: removed within the liveness window; started again with the same id: added again")
    func crashAndComeBack() async throws {
        try await NamespacePair.with { pair in
            let watcher = try pair.watcher(in: pair.b, ["--liveness", "2s"])
            let home = try AgentHome(in: pair.directory)
            let first = try await pair.agent(in: pair.a, name: "Phoenix", kind: "tv", home: home)
            // A bystander that stays.
            let other = try await pair.agent(in: pair.a, name: "Bystander", kind: "speaker")
            let added = try await watcher.waitFor("added Phoenix") { $0.event == "added" && $0.id == first.id }
            #expect(added.event["address"] == first.address, "\(added.event)")
            try await watcher.waitFor("added Bystander") { $0.event == "added" && $0.id == other.id }

            // No goodbye: the records stay in the watcher's cache, and Describe fails.
            let beforeCrash = watcher.count
            #expect(await first.stop(SIGKILL) == 128 + SIGKILL)
            let removed = try await watcher.waitFor("removed Phoenix", from: beforeCrash) { $0.event == "removed" && $0.id == first.id }
            #expect(removed.event.name == "Phoenix", "\(removed.event)")

            // Same XDG_CONFIG_HOME, so the same device id; a new port.
            let second = try await pair.agent(in: pair.a, name: "Phoenix", kind: "tv", home: home)
            #expect(second.id == first.id)
            let back = try await watcher.waitFor("added Phoenix again", from: removed.index) { $0.event == "added" && $0.id == first.id }
            #expect(back.event.name == "Phoenix" && back.event["status"] == "available", "\(back.event)")
            #expect(back.event["address"] == second.address, "\(back.event)")
            #expect(!watcher.events().contains { $0.event == "removed" && $0.id == other.id }, "\(watcher.transcript)")

            let described = try await pair.baton(in: pair.b, ["describe", "Phoenix", "--json"])
            #expect(described.code == 0 && (try? JSON.parse(described.stdout))?["address"] == .string(second.address), "\(described)")
        }
    }

    @Test("an interface going down: its devices are removed; back up: added again")
    func interfaceDownAndUp() async throws {
        try await NamespacePair.with { pair in
            // Debug logs (-v), for the failure message.
            async let tvAgent = pair.agent(in: pair.b, name: "Far TV", kind: "tv", arguments: ["-v"])
            async let speakerAgent = pair.agent(in: pair.b, name: "Far Speaker", kind: "speaker", arguments: ["-v"])
            let agents = try await [tvAgent, speakerAgent]
            // A liveness window far longer than the test: the interface going away must do it.
            let watcher = try pair.watcher(in: pair.a, ["--liveness", "10m", "-v"])
            for agent in agents {
                try await watcher.waitFor("added \(agent.name)") { $0.event == "added" && $0.id == agent.id }
            }

            let beforeDown = watcher.count
            try pair.setLink(pair.b, up: false)
            for agent in agents {
                try await watcher.waitFor("removed \(agent.name)", from: beforeDown) { $0.event == "removed" && $0.id == agent.id }
            }

            let beforeUp = watcher.count
            try pair.setLink(pair.b, up: true)
            try pair.waitForCarrier(pair.a)
            try pair.waitForCarrier(pair.b)
            for agent in agents {
                let back: (index: Int, event: WatchEvent)
                do {
                    back = try await watcher.waitFor("added \(agent.name) again", from: beforeUp) { $0.event == "added" && $0.id == agent.id }
                } catch {
                    throw NamespacePair.Failure("\(error)\nagent logs:\n\(agents[0].log)\n\(agents[1].log)")
                }
                #expect(back.event["address"] == agent.address, "\(back.event)")
            }
            for agent in agents { #expect(agent.isRunning, "\(agent.log)") }
            let described = try await pair.baton(in: pair.a, ["describe", "Far TV", "--json"])
            #expect(described.code == 0 && (try? JSON.parse(described.stdout))?["device"]?["id"] == .string(agents[0].id), "\(described)")
        }
    }
}
