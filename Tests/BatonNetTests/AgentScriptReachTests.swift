import BatonClient
import BatonCore
import Foundation
import Testing

/// An agent configuration whose Lua code reaches another device itself: the `relay` service
/// and the `relay:` launch function launch `private:` on the device at `target` (host:port),
/// handing on `out` for the other agent's launch function to write.
enum RelayFixtures {
    static let app = "org.test.relay"

    static let config = #"""
        device{ name = "Relay", kind = "hub" }

        app{ id = "org.test.relay", name = "Relay", schemes = { "relay" },
             launch = function(uri, data)
               return baton.launch(data.target, "private:from-launch", { data = { out = data.out } })
             end,
             services = {
               relay = function(msg)
                 local status, detail = baton.launch(msg.target, "private:from-provider", { data = { out = msg.out } })
                 return { status = status, detail = detail }
               end,
             } }
        """#
}

/// Lua code inside an agent (a provider, a launch function) reaching another device: it dials
/// as the agent's own device, over mutual TLS, with the trust rules `baton run` has.
@Suite("Agents' Lua reaches other devices with the agent's identity", .timeLimit(.minutes(3)))
struct AgentScriptReachTests {
    @Test("a provider and a launch function of agent A launch on agent B of the same account over TLS, and B runs it")
    func relayOverTLS() async throws {
        try await withAgent(AccountFixtures.config) { b in
            try await withAgent(RelayFixtures.config) { a in
                let client = makeClient()
                defer { client.shutdown() }

                let fromProvider = b.directory.file("from-provider.ran")
                let reply = try await client.send(
                    ["target": .string(b.address.description), "out": .string(fromProvider)],
                    to: "relay", app: RelayFixtures.app, on: a.address).get()
                let answer = Fixtures.message(reply)
                #expect(answer["status"] == .string("success"), "A's provider could not launch on B: \(answer)\nA's log:\n\(a.log)\nB's log:\n\(b.log)")
                #expect(b.directory.read("from-provider.ran") == "ran", "B never ran the launch A's provider asked for")

                let fromLaunch = b.directory.file("from-launch.ran")
                let (status, detail) = await client.launch(
                    LaunchRequest(uri: "relay:go", data: ["target": .string(b.address.description), "out": .string(fromLaunch)]),
                    on: a.address)
                #expect(status == .success, "A's launch function could not launch on B: \(detail)\nA's log:\n\(a.log)")
                #expect(b.directory.read("from-launch.ran") == "ran", "B never ran the launch A's launch function asked for")
            }
        }
    }
}
