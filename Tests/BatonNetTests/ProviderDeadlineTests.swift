import BatonClient
import BatonCore
import BatonNet
import Foundation
import NIOCore
import Testing

/// Issue 21, attack 5: a stranger freezes an agent with one message. An anonymous app's
/// provider that matches `^(.-)=(.-);` against a 600 KB message of `=` and no `;` runs for
/// hours under stock Lua's matcher (n²/2 steps), inside one C call the count hook never reaches. The agent must
/// stop it at the request's deadline and answer `unknown` (timed out), serve its own account
/// meanwhile (Lua runs apart from the loop that serves connections), and go on serving.
@Suite("A provider past its deadline")
struct ProviderDeadlineTests {
    static let parserApp = "org.test.parser"
    static let otherApp = "org.test.other"

    static let config = #"""
        device{ name = "Deadline Test", kind = "tv" }

        handler{ scheme = "door", run = { "/bin/sh", "-c", [[echo ran > "$1"]], "sh", "{data.out}" } }

        app{ id = "org.test.parser", name = "Parser", anonymous = true,
             services = { parse = function(msg)
               if #msg.text > 1000 then
                 -- Tells the test the bomb has reached the provider.
                 local f = assert(io.open("@DIR@/parsing", "w"))
                 f:close()
               end
               local key, value = msg.text:match("^(.-)=(.-);")
               return { key = key or "", value = value or "" }
             end } }

        app{ id = "org.test.other", name = "Other", anonymous = true, schemes = { "other" },
             services = { echo = function(msg) return msg end },
             launch = function(uri, data)
               if data.spin then
                 assert(io.open("@DIR@/spinning", "w")):close()
                 while true do end
               end
               return "success"
             end }
        """#

    @Test("a stranger's 600 KB pattern bomb: unknown (timed out) at its deadline; the owner's describe and launch are served meanwhile; the agent goes on")
    func patternBombFromAStranger() async throws {
        let other = try TestAccount()
        try await withAgent(Self.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            // A short connect timeout: an agent whose loop is held by the bomb fails it.
            let own = makeClient(connectTimeout: .seconds(2))
            defer { own.shutdown() }

            // A well-formed message is parsed.
            let small = try await stranger.send(["text": .string("k=v;")], to: "parse", app: Self.parserApp, on: agent.address).get()
            #expect(small.status == .success, "\(small)")
            #expect(Fixtures.message(small) == ["key": .string("k"), "value": .string("v")])

            let text = String(repeating: "=", count: 600 * 1024)
            let bomb = Task {
                try await stranger.send(["text": .string(text)], to: "parse", app: Self.parserApp, on: DeviceTarget(agent.address), timeout: .seconds(4)).get()
            }
            // Once the provider has the message, the agent's own account is served while it runs.
            let parsing = await eventually { agent.directory.read("parsing") != nil }
            #expect(parsing, "the bomb never reached the provider; log:\n\(agent.log)")
            let (device, apps) = try await own.describe(agent.address).get()
            #expect(device.name == "Deadline Test")
            #expect(apps.map(\.id) == [Self.parserApp, Self.otherApp], "\(apps)")
            let mark = agent.directory.file("own.ran")
            let launched = await own.launch(LaunchRequest(uri: "door:own", data: ["out": .string(mark)]), on: agent.address)
            #expect(launched.0 == .success, "\(launched.1)")

            let reply = try await bomb.value
            #expect(reply.status == .unknown, "\(reply)")
            #expect(reply.detail.contains("timed out"), "\(reply)")

            // Lua is free again: the stranger's other app and the parser both answer.
            let echo = try await stranger.send(["hi": .string("there")], to: "echo", app: Self.otherApp, on: agent.address).get()
            #expect(Fixtures.message(echo) == ["hi": .string("there")], "\(echo)")
            let again = try await stranger.send(["text": .string("a=b;")], to: "parse", app: Self.parserApp, on: agent.address).get()
            #expect(Fixtures.message(again) == ["key": .string("a"), "value": .string("b")], "\(again)")
            #expect(agent.isRunning)
            // The provider itself was stopped, not only its caller answered.
            let stopped = await eventually { agent.log.contains("timed out: the task ran past its deadline") }
            #expect(stopped, "\(agent.log)")
            #expect(await eventually { agent.directory.read("own.ran") != nil })
        }
    }

    /// The request's deadline is the caller's to choose: a stranger's an hour away must not
    /// hold Lua for an hour. One stretch of Lua without a wait ends after 10 s.
    @Test("a stranger's bomb with a deadline an hour away: unknown (timed out) after 10 s of Lua without a wait; the agent goes on")
    func bombWithAFarDeadline() async throws {
        let other = try TestAccount()
        try await withAgent(Self.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            let text = String(repeating: "=", count: 600 * 1024)
            let reply = try await stranger.send(
                ["text": .string(text)], to: "parse", app: Self.parserApp, on: DeviceTarget(agent.address), timeout: .seconds(3600)
            ).get()
            #expect(reply.status == .unknown, "\(reply)")
            #expect(reply.detail.contains("timed out"), "\(reply)")
            let echo = try await stranger.send(["hi": .string("again")], to: "echo", app: Self.otherApp, on: agent.address).get()
            #expect(Fixtures.message(echo) == ["hi": .string("again")], "\(echo)")
        }
    }

    @Test("a launch function that never returns: unknown (timed out) at its deadline, and the owner is served meanwhile")
    func spinningLaunchFunction() async throws {
        let other = try TestAccount()
        try await withAgent(Self.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            let own = makeClient(connectTimeout: .seconds(2))
            defer { own.shutdown() }

            let spin = Task {
                try await stranger.launch(
                    LaunchRequest(uri: "other:spin", appID: Self.otherApp, data: ["spin": .bool(true)]), on: DeviceTarget(agent.address), timeout: .seconds(3)
                ).get()
            }
            let spinning = await eventually { agent.directory.read("spinning") != nil }
            #expect(spinning, "the launch function never started; log:\n\(agent.log)")
            let (_, apps) = try await own.describe(agent.address).get()
            #expect(apps.count == 2, "\(apps)")
            let launched = await own.launch(LaunchRequest(uri: "door:own", data: ["out": .string(agent.directory.file("own.ran"))]), on: agent.address)
            #expect(launched.0 == .success, "\(launched.1)")

            let (status, detail) = try await spin.value
            #expect(status == .unknown, "\(detail)")
            #expect(detail.contains("timed out"), "\(detail)")
            let normal = await stranger.launch(LaunchRequest(uri: "other:ok", appID: Self.otherApp), on: agent.address)
            #expect(normal.0 == .success, "\(normal.1)")
        }
    }
}
