import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

/// Every request has a deadline: the caller hears a timeout status when it passes, and the
/// agent stops the work it was doing for it. Against a real agent process.
@Suite("Deadlines", .timeLimit(.minutes(1)))
struct DeadlineTests {
    @Test("a Lua launch function that never returns: the caller gets unknown (timed out) at its deadline, and the agent cancels the function")
    func launchFunctionCancelled() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            // Connected first, so that the deadline is the request's alone on a loaded machine.
            #expect(await client.launch(LaunchRequest(uri: "media:before"), on: agent.address).0 == .success)
            let closed = agent.directory.file("launch.closed")
            let started = Date()
            let request = LaunchRequest(uri: "status:forever", appID: Fixtures.status, data: ["closed": .string(closed)])
            let (status, detail) = try await client.launch(request, on: DeviceTarget(agent.address), timeout: .seconds(1)).get()
            #expect(status == .unknown)
            #expect(detail == "timed out: no answer within 1s")
            #expect(Date().timeIntervalSince(started) < 30, "answered at the deadline, not after the agent's own limit")
            // The function's <close> variable closed: the agent cancelled it.
            let cancelled = await eventually { FileManager.default.fileExists(atPath: closed) }
            #expect(cancelled, "the launch function was not cancelled\n\(agent.log)")
            // The connection serves on.
            #expect(await client.launch(LaunchRequest(uri: "media:after"), on: agent.address).0 == .success)
        }
    }

    @Test("a provider that never answers: the request gets unknown (timed out), the provider is cancelled, the channel stays open")
    func providerCancelled() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (opened, status, detail) = await client.openService("forever", app: Fixtures.services, on: agent.address)
            let channel = try #require(opened, "\(status): \(detail)")
            let closed = agent.directory.file("provider.closed")
            let reply = await channel.send(["closed": .string(closed)], timeout: .milliseconds(500))
            #expect(reply.status == .unknown)
            #expect(reply.detail == "timed out: no answer within 500ms")
            let cancelled = await eventually { FileManager.default.fileExists(atPath: closed) }
            #expect(cancelled, "the provider was not cancelled\n\(agent.log)")
            #expect(channel.closedStatus == nil)
            channel.close()
            #expect(Fixtures.message(try await client.send(["k": "v"], to: "echo", app: Fixtures.services, on: agent.address).get()) == ["k": "v"])
        }
    }

    @Test("after many answered requests (whose contexts the connection reuses), one that is never answered still times out and is cancelled, and only it")
    func reusedContextsCancelTheirOwnRequest() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (opened, status, detail) = await client.openService("echo", app: Fixtures.services, on: agent.address)
            let echo = try #require(opened, "\(status): \(detail)")
            for i in 0..<50 {
                let reply = await echo.send(["i": .int(Int64(i))])
                #expect(reply.status == .success && Fixtures.message(reply) == ["i": .int(Int64(i))])
            }
            let (stuck, status2, detail2) = await client.openService("forever", app: Fixtures.services, on: agent.address)
            let forever = try #require(stuck, "\(status2): \(detail2)")
            let closed = agent.directory.file("reused.closed")
            let reply = await forever.send(["closed": .string(closed)], timeout: .milliseconds(500))
            #expect(reply.detail == "timed out: no answer within 500ms")
            #expect(await eventually { FileManager.default.fileExists(atPath: closed) }, "the provider was not cancelled\n\(agent.log)")
            // The answered requests' work was not cancelled after the fact, and the echo serves on.
            #expect(!agent.log.contains("cancelled a task") || agent.log.components(separatedBy: "cancelled a task").count == 2, "\(agent.log)")
            #expect(await echo.send(["k": "v"]).status == .success)
        }
    }

    @Test("the client goes away while the agent serves: the agent cancels the work")
    func clientGone() async throws {
        try await withAgent { agent in
            let client = makeClient()
            let started = agent.directory.file("gone.started"), closed = agent.directory.file("gone.closed")
            #expect(await client.launch(LaunchRequest(uri: "media:before"), on: agent.address).0 == .success)
            _ = client.send(["started": .string(started), "closed": .string(closed)], to: "forever", app: Fixtures.services, on: agent.address)
            #expect(await eventually { FileManager.default.fileExists(atPath: started) })
            client.shutdown()
            #expect(await eventually { FileManager.default.fileExists(atPath: closed) }, "\(agent.log)")
        }
    }

    @Test("baton launch --timeout: unknown, saying it timed out, exit 3 (timeout); a bad --timeout is a usage error")
    func commandLine() async throws {
        try await withAgent { agent in
            let closed = agent.directory.file("cli.closed")
            let result = try await runBaton([
                "launch", agent.address.description, "status:forever", "--app", Fixtures.status, "--timeout", "1s",
                "--data", #"{"closed": "\#(closed)"}"#,
            ])
            #expect(result.code == 3, "\(result)")
            #expect(result.stdout == "unknown: timed out: no answer within 1s\n", "\(result)")
            #expect(await eventually { FileManager.default.fileExists(atPath: closed) }, "\(agent.log)")
            let bad = try await runBaton(["launch", agent.address.description, "x:y", "--timeout", "soon"])
            #expect(bad.code == 2, "\(bad)")
            #expect(bad.stderr.contains("Invalid --timeout 'soon'"), "\(bad)")
        }
    }

    @Test("baton.launch(dev, uri, {timeout = 1}) and conn:send(msg, {timeout = 0.5}) in a script: unknown, timed out")
    func script() async throws {
        try await withAgent { agent in
            let closed = agent.directory.file("script.closed")
            let script = agent.directory.file("deadline.lua")
            try """
                local status, detail = baton.launch("\(agent.address)", "status:forever",
                  { app = "\(Fixtures.status)", data = { closed = "\(closed)" }, timeout = 1 })
                print(status, detail)
                local conn = assert(baton.appservice.open("\(agent.address)", "forever", { package = "\(Fixtures.services)" }))
                local reply, rstatus, rdetail = conn:send({}, { timeout = 0.5 })
                print(reply, rstatus, rdetail)
                conn:close()
                print(pcall(baton.launch, "\(agent.address)", "x:y", { timeout = -1 }))
                """.write(toFile: script, atomically: true, encoding: .utf8)
            let result = try await runBaton(["run", script])
            #expect(result.code == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "unknown\ttimed out: no answer within 1s", "\(result)")
            #expect(lines.dropFirst().first == "nil\tunknown\ttimed out: no answer within 500ms", "\(result)")
            #expect(lines.last?.contains("timeout must be a number of seconds above 0") == true, "\(result)")
            #expect(await eventually { FileManager.default.fileExists(atPath: closed) }, "\(agent.log)")
        }
    }
}
