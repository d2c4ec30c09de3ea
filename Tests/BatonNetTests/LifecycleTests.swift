import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What open channels and pending requests hear when the agent goes away.
@Suite("An agent going away", .timeLimit(.minutes(1)))
struct LifecycleTests {
    /// Opens a `sleep` channel and sends it a request that sleeps `seconds`; returns once the
    /// provider is running (it writes a file first).
    static func sleepingRequest(
        _ client: BatonClient, _ agent: AgentProcess, seconds: Double, tag: String
    ) async throws -> (AppServiceConnection, EventLoopFuture<ServiceReply>) {
        let (channel, status, detail) = await client.openService("sleep", app: Fixtures.services, on: agent.address)
        let conn = try #require(channel, "open: \(status) \(detail)")
        let started = agent.directory.file("\(tag).started")
        let reply: EventLoopFuture<ServiceReply> = conn.send(["seconds": .double(seconds), "started": .string(started), "tag": .string(tag)])
        let running = await eventually { FileManager.default.fileExists(atPath: started) }
        try #require(running, "the provider never started; agent log:\n\(agent.log)")
        return (conn, reply)
    }

    @Test("SIGTERM and SIGINT: open channels get canceled; the agent exits 0", arguments: [SIGTERM, SIGINT])
    func sigterm(_ signal: Int32) async throws {
        let agent = try await AgentProcess.start(config: Fixtures.config)
        let client = makeClient()
        defer { client.shutdown() }
        var events: [AsyncStream<ClosedStatus>] = []
        var channels: [AppServiceConnection] = []
        for service in ["echo", "watch", "echo"] {
            let (channel, status, detail) = await client.openService(service, app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open \(service): \(status) \(detail)")
            channels.append(conn)
            events.append(conn.closedEvents)
        }
        #expect(Fixtures.message(await channels[0].send(["x": .int(1)])) == ["x": .int(1)])
        let code = await agent.stop(signal)
        #expect(code == 0, "agent log:\n\(agent.log)")
        for (i, event) in events.enumerated() {
            #expect(await first(of: event) == .canceled, "channel \(i)")
        }
        let after = await channels[0].send(["x": .int(2)])
        #expect(after.status == .appServiceConnectionClosed)
        let (status, _) = await client.launch(LaunchRequest(uri: "media:x"), on: agent.address)
        #expect(status == .remoteSystemUnavailable)
    }

    @Test("SIGTERM: a request in flight gets its answer, as `baton agent --help` promises")
    func sigtermAnswersInFlight() async throws {
        let agent = try await AgentProcess.start(config: Fixtures.config)
        let client = makeClient()
        defer { client.shutdown() }
        let (conn, pending) = try await Self.sleepingRequest(client, agent, seconds: 1, tag: "term")
        let closedEvent = conn.closedEvents
        agent.signal(SIGTERM)
        let reply = try #require(await result(of: pending), "the pending request was never answered")
        let answer = try reply.get()
        #expect(answer.status == .success, "\(answer)")
        #expect(answer.message == ["slept": .double(1)])
        #expect(await first(of: closedEvent) == .canceled)
        #expect(await agent.waitForExit() == 0)
    }

    @Test("kill -9 mid-request: the pending send gets remote_system_unavailable, the channel unknown; a new agent works with the same client")
    func killed() async throws {
        let first = try await AgentProcess.start(config: Fixtures.config)
        let client = makeClient()
        defer { client.shutdown() }
        let (idle, _, _) = await client.openService("echo", app: Fixtures.services, on: first.address)
        let idleConn = try #require(idle)
        let idleClosed = idleConn.closedEvents
        let (conn, pending) = try await Self.sleepingRequest(client, first, seconds: 30, tag: "kill")
        let closedEvent = conn.closedEvents
        #expect(await first.stop(SIGKILL) == 128 + SIGKILL)
        let reply = try #require(await result(of: pending), "the pending request was never answered")
        let answer = try reply.get()
        #expect(answer.status == .remoteSystemUnavailable, "\(answer)")
        #expect(await Self.firstClosed(closedEvent) == .unknown)
        #expect(await Self.firstClosed(idleClosed) == .unknown)
        #expect(conn.closedStatus == .unknown)
        #expect(await conn.send([:]).status == .appServiceConnectionClosed)
        let (gone, _) = await client.launch(LaunchRequest(uri: "media:x"), on: first.address)
        #expect(gone == .remoteSystemUnavailable)

        // Another agent, on another port, with the same client.
        let second = try await AgentProcess.start(config: Fixtures.config, directory: first.directory)
        #expect(second.address != first.address)
        #expect(second.id == first.id, "the device id is kept in XDG_CONFIG_HOME")
        let (status, detail) = await client.launch(LaunchRequest(uri: "media:again"), on: second.address)
        #expect(status == .success, "\(detail)")
        let (channel, openStatus, _) = await client.openService("echo", app: Fixtures.services, on: second.address)
        let again = try #require(channel, "open: \(openStatus)")
        #expect(Fixtures.message(await again.send(["back": .bool(true)])) == ["back": .bool(true)])
        again.close()
        #expect(await second.stop(SIGTERM) == 0)
    }

    /// `first(of:)`, under a name that does not clash with a local called `first`.
    static func firstClosed<T: Sendable>(_ stream: AsyncStream<T>) async -> T? {
        await BatonNetTests.first(of: stream)
    }
}
