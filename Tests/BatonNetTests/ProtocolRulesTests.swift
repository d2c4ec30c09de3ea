import BatonClient
import BatonCore
import BatonWire
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The protocol's per-message rules, on real connections: broken messages are refused with a
/// status and the connection lives on; every request gets exactly one answer.
@Suite("Protocol rules", .timeLimit(.minutes(1)))
struct ProtocolRulesTests {
    /// A raw connection past its handshake, with channel 1 open to the echo service.
    static func rawEchoChannel(_ agent: AgentProcess, maxFrameSize: UInt32 = 0) async throws -> RawConnection {
        let raw = try RawConnection(port: agent.address.port)
        let ack = try await onThread { raw.handshake(maxFrameSize: maxFrameSize) }
        guard case .frame(let frame) = ack, case .helloAck = frame.body else { throw AgentFailure("no HelloAck: \(ack)") }
        raw.send(.with { $0.openServiceRequest = .with { $0.requestID = 1; $0.channelID = 1; $0.serviceName = "echo"; $0.appID = Fixtures.services } })
        let open = try await onThread { raw.read() }
        guard case .frame(let openFrame) = open, case .openServiceResponse(let response) = openFrame.body, response.status == .success else {
            throw AgentFailure("open failed: \(open)")
        }
        return raw
    }

    static func entry(_ key: String, _ value: Baton_V1_Value) -> Baton_V1_Dictionary.Entry {
        .with { $0.key = key; $0.value = value }
    }

    static func int(_ i: Int64) -> Baton_V1_Value { .with { $0.intValue = i } }

    static var tooDeep: Baton_V1_Dictionary {
        var inner = Baton_V1_Dictionary.with { $0.entries = [entry("leaf", int(1))] }
        for _ in 0..<70 {
            let wrapped = inner
            inner = .with { $0.entries = [entry("d", .with { $0.dictionaryValue = wrapped })] }
        }
        return inner
    }

    static let brokenMessages: [(String, Baton_V1_Dictionary)] = [
        ("a repeated key", .with { $0.entries = [entry("k", int(1)), entry("k", int(2))] }),
        ("a mixed array", .with {
            $0.entries = [entry("list", .with { $0.arrayValue = .with { $0.elements = [int(1), .with { $0.stringValue = "x" }] } })]
        }),
        ("a UUID of 15 bytes", .with { $0.entries = [entry("id", .with { $0.uuidValue = Data(repeating: 7, count: 15) })] }),
        ("a Value with no kind", .with { $0.entries = [entry("nothing", Baton_V1_Value())] }),
        ("an entry with no value", .with { $0.entries = [.with { $0.key = "bare" }] }),
        ("nesting past 30 levels (70 deep)", tooDeep),
    ]

    @Test("a broken service message is refused with a status; the connection lives on")
    func brokenServiceMessages() async throws {
        try await withAgent { agent in
            let raw = try await Self.rawEchoChannel(agent)
            var id: UInt64 = 10
            for (name, message) in Self.brokenMessages {
                id += 1
                let requestID = id
                raw.send(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = requestID; $0.message = message } })
                let answer = try await onThread { raw.read() }
                guard case .frame(let frame) = answer, case .serviceResponse(let response) = frame.body else {
                    Issue.record("\(name): no ServiceResponse: \(answer)")
                    return
                }
                #expect(response.requestID == requestID, "\(name)")
                #expect(response.channelID == 1, "\(name)")
                #expect(response.status != .success, "\(name): \(response)")
                #expect(!response.detail.isEmpty, "\(name)")
            }
            raw.send(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = 99; $0.message = .with { $0.entries = [Self.entry("ok", Self.int(1))] } } })
            let fine = try await onThread { raw.read() }
            guard case .frame(let frame) = fine, case .serviceResponse(let response) = frame.body else {
                Issue.record("no ServiceResponse: \(fine)")
                return
            }
            #expect(response.requestID == 99)
            #expect(response.status == .success)
        }
    }

    @Test("broken launch data is refused with a status; the connection lives on")
    func brokenLaunchData() async throws {
        try await withAgent { agent in
            let raw = try RawConnection(port: agent.address.port)
            _ = try await onThread { raw.handshake() }
            var id: UInt64 = 0
            for (name, data) in Self.brokenMessages {
                id += 1
                let requestID = id
                raw.send(.with { $0.launchRequest = .with { $0.requestID = requestID; $0.uri = "media:x"; $0.data = data } })
                let answer = try await onThread { raw.read() }
                guard case .frame(let frame) = answer, case .launchResponse(let response) = frame.body else {
                    Issue.record("\(name): no LaunchResponse: \(answer)")
                    return
                }
                #expect(response.requestID == requestID, "\(name)")
                #expect(response.status != .success, "\(name): \(response)")
            }
            raw.send(.with { $0.describeRequest = .with { $0.requestID = 50 } })
            let describe = try await onThread { raw.read() }
            guard case .frame(let frame) = describe, case .describeResponse(let response) = frame.body else {
                Issue.record("no DescribeResponse: \(describe)")
                return
            }
            #expect(response.requestID == 50)
            #expect(response.device.id == agent.id)
        }
    }

    @Test("requests on channels that are not open, and a channel id opened twice")
    func channelBookkeeping() async throws {
        try await withAgent { agent in
            let raw = try await Self.rawEchoChannel(agent)
            raw.send(.with { $0.serviceRequest = .with { $0.channelID = 42; $0.requestID = 2 } })
            let notOpen = try await onThread { raw.read() }
            guard case .frame(let f1) = notOpen, case .serviceResponse(let r1) = f1.body else {
                Issue.record("no ServiceResponse: \(notOpen)")
                return
            }
            #expect(r1.requestID == 2 && r1.channelID == 42)
            #expect(r1.status == .appServiceConnectionClosed)

            raw.send(.with { $0.openServiceRequest = .with { $0.requestID = 3; $0.channelID = 1; $0.serviceName = "echo"; $0.appID = Fixtures.services } })
            let twice = try await onThread { raw.read() }
            guard case .frame(let f2) = twice, case .openServiceResponse(let r2) = f2.body else {
                Issue.record("no OpenServiceResponse: \(twice)")
                return
            }
            #expect(r2.requestID == 3)
            #expect(r2.status != .success)

            // Closing it, then using it.
            raw.send(.with { $0.closeService = .with { $0.channelID = 1; $0.status = .completed } })
            raw.send(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = 4 } })
            let closed = try await onThread { raw.read() }
            guard case .frame(let f3) = closed, case .serviceResponse(let r3) = f3.body else {
                Issue.record("no ServiceResponse: \(closed)")
                return
            }
            #expect(r3.requestID == 4)
            #expect(r3.status == .appServiceConnectionClosed)
        }
    }

    @Test("a reply over the client's announced frame size gets a status, not silence")
    func replyOverClientLimit() async throws {
        try await withAgent { agent in
            var options = BatonClient.Options()
            options.security = TestAccount.shared.security
            options.limits = FrameLimits(maxFrameSize: 4096)
            let client = BatonClient(eventLoop: clientGroup.next(), options: options)
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("echo", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let small: EventLoopFuture<ServiceReply> = conn.send(["blob": .string(String(repeating: "s", count: 3000))])
            #expect(try await small.get().status == .success)
            // The request fits the agent's 1 MiB; the echoed reply does not fit the client's 4 KiB.
            let big: EventLoopFuture<ServiceReply> = conn.send(["blob": .string(String(repeating: "b", count: 5000))])
            let answer = await result(of: big, within: 20)
            #expect(answer != nil, "the request was never answered")
            if let reply = try answer?.get() {
                #expect(reply.status == .messageSizeTooLarge, "\(reply)")
            }
            let after: EventLoopFuture<ServiceReply> = conn.send(["after": .int(1)])
            let afterAnswer = await result(of: after, within: 20)
            #expect(try afterAnswer?.get().status == .success)
        }
    }

    @Test("a describe response over the client's announced frame size gets an answer, not silence")
    func describeOverClientLimit() async throws {
        try await withAgent { agent in
            let raw = try RawConnection(port: agent.address.port, readTimeout: 3)
            let ack = try await onThread { raw.handshake(maxFrameSize: 256) }
            guard case .frame(let frame) = ack, case .helloAck = frame.body else {
                Issue.record("no HelloAck: \(ack)")
                return
            }
            raw.send(.with { $0.describeRequest = .with { $0.requestID = 5 } })
            let answer = try await onThread { raw.read() }
            // Six apps do not fit 256 bytes; whatever the agent does, it must not leave the
            // request unanswered while the connection stays open, nor send a frame over 256.
            switch answer {
            case .frame(let f):
                if case .describeResponse(let r) = f.body { #expect(r.requestID == 5) }
                let size = ((try? f.serializedBytes()) as [UInt8]?)?.count ?? 0
                #expect(size <= 256, "the agent sent a frame of \(size) bytes, over the client's limit of 256")
            case .closed:
                break
            case .timedOut, .garbage:
                Issue.record("the describe request was never answered: \(answer)")
            }
        }
    }

    @Test("closing a channel answers its pending requests with app_service_connection_closed")
    func closeAnswersPending() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("sleep", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let started = agent.directory.file("close.started")
            let pending: EventLoopFuture<ServiceReply> = conn.send(["seconds": .double(5), "started": .string(started), "tag": .string("close")])
            let running = await eventually { FileManager.default.fileExists(atPath: started) }
            try #require(running)
            conn.close()
            let answer = try #require(await result(of: pending, within: 5), "the pending request was never answered")
            #expect(try answer.get().status == .appServiceConnectionClosed, "\(answer)")
        }
    }

    @Test("the client closes while the agent waits for its answer: conn:send gets app_service_connection_closed")
    func closeWhileAgentWaits() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("ask", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let loop = client.eventLoop
            // Answers only after the channel has closed: the close comes first.
            try await loop.submit {
                conn.onRequest = { _ in
                    conn.close()
                    return loop.scheduleTask(in: .milliseconds(200)) { ServiceReply(status: .success, message: ["late": .bool(true)]) }.futureResult
                }
            }.get()
            let mine: EventLoopFuture<ServiceReply> = conn.send(["question": .dictionary(["q": .string("?")]), "tag": .string("closing")])
            let answer = try #require(await result(of: mine, within: 5), "the client's own request was never answered")
            #expect(try answer.get().status == .appServiceConnectionClosed)
            let recorded = await recordedClose("ask:closing", client, agent)
            #expect(recorded == .string("app_service_connection_closed"), "\(agent.log)")
        }
    }

    struct Refusal: Error {}

    @Test("an onRequest handler whose future fails still answers the agent (failure)")
    func failingOnRequest() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("ask", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let loop = client.eventLoop
            try await loop.submit {
                conn.onRequest = { _ in loop.makeFailedFuture(Refusal()) }
            }.get()
            let reply: EventLoopFuture<ServiceReply> = conn.send(["question": .dictionary(["q": .string("?")]), "tag": .string("failing")])
            // A deadline, not a measure: the first test phase keeps both cores busy.
            let answer = await result(of: reply, within: 20)
            #expect(answer != nil, "the agent's conn:send never got an answer, so neither did the client")
            if let answer {
                let message = try answer.get().message
                #expect(message?["status"] == .string("failure"), "\(String(describing: message))")
            }
        }
    }

    @Test("the client goes away: the agent's conn.on_closed hears unknown")
    func clientGoesAway() async throws {
        try await withAgent { agent in
            let leaving = makeClient()
            let (channel, status, detail) = await leaving.openService("watch", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            #expect(Fixtures.message(await conn.send(["tag": .string("gone")])) == ["watching": .string("gone")])
            leaving.shutdown()

            let observer = makeClient()
            defer { observer.shutdown() }
            #expect(await recordedClose("gone", observer, agent) == .string("unknown"), "on_closed never ran, or heard another status")
        }
    }

    @Test("SIGTERM: raw connections get Goodbye with reason shutdown")
    func goodbyeOnShutdown() async throws {
        let agent = try await AgentProcess.start(config: Fixtures.config)
        let raw = try RawConnection(port: agent.address.port)
        let ack = try await onThread { raw.handshake() }
        guard case .frame(let frame) = ack, case .helloAck = frame.body else {
            Issue.record("no HelloAck: \(ack)")
            await agent.stop(SIGKILL)
            return
        }
        agent.signal(SIGTERM)
        let results = try await onThread { raw.readUntilClosed() }
        #expect(results.compactMap(\.goodbye).map(\.reason) == [.shutdown], "\(results)")
        #expect(results.last == .closed)
        #expect(await agent.waitForExit() == 0)
    }

    @Test("kill -9, then a new agent on the same port: the same client reconnects")
    func samePortRestart() async throws {
        let first = try await AgentProcess.start(config: Fixtures.config)
        let client = makeClient()
        defer { client.shutdown() }
        let (channel, status, _) = await client.openService("echo", app: Fixtures.services, on: first.address)
        let conn = try #require(channel, "open: \(status)")
        let closedEvent = conn.closedEvents
        await first.stop(SIGKILL)
        // Once the client has seen the connection go.
        #expect(await BatonNetTests.first(of: closedEvent) == .unknown)
        let second = try await AgentProcess.start(
            config: Fixtures.config, arguments: ["--listen", "127.0.0.1:\(first.address.port)"], directory: first.directory)
        #expect(second.address == first.address)
        let (after, detail) = await client.launch(LaunchRequest(uri: "media:after"), on: second.address)
        #expect(after == .success, "\(detail)")
        #expect(await second.stop(SIGTERM) == 0)
    }
}
