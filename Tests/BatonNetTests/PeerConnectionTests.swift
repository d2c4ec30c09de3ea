import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOEmbedded
import Testing

/// A link made of values: what a session writes is decoded and kept, and the test says what
/// arrives. The seam a broker relay will use, with no socket.
final class FakeLink: Link, @unchecked Sendable {
    let eventLoop: any EventLoop
    var session: (any LinkSession)?
    var peerDescription: String { "fake peer" }
    /// Every frame written, decoded again.
    var written: [Frame] = []
    var closed = false
    /// What the session last asked of the link's reading: nil until it asks.
    var receivingPaused: Bool?

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func write(limit: Int, _ encode: (inout ByteBuffer, Int) throws(WireError) -> Void) -> WireError? {
        var buffer = ByteBuffer()
        do throws(WireError) {
            try encode(&buffer, limit)
        } catch {
            return error
        }
        var decoder = FrameDecoder(limits: FrameLimits(maxFrameSize: FrameLimits.hardLimit))
        while let event = try? decoder.decode(buffer: &buffer) {
            if case .frame(let frame) = event { written.append(frame) }
        }
        return nil
    }

    func pauseReceiving(_ paused: Bool) { receivingPaused = paused }

    func close() {
        guard !closed else { return }
        closed = true
        let session = self.session
        self.session = nil
        session?.linkClosed(self)
    }

    func establish(_ identity: PeerIdentity = PeerIdentity(authorization: .sameAccount, deviceID: nil, account: nil)) {
        session?.linkEstablished(self, peer: identity)
    }

    func receive(_ frame: Frame) {
        session?.link(self, received: .frame(frame))
    }

    /// The frames written since the last look.
    func take() -> [Frame] {
        defer { written = [] }
        return written
    }
}

/// An agent that answers from values.
final class ValueAgent: PeerConnectionDelegate, ServiceChannelHandler, @unchecked Sendable {
    let loop: any EventLoop
    var launches: [LaunchRequest] = []
    var closedChannels: [(UInt64, ClosedStatus)] = []
    var closedReason: String?
    /// Launches wait for this when set.
    var slowLaunch: EventLoopPromise<(LaunchStatus, String)>?
    /// Launches whose caller gave up (their deadline passed, or the connection ended).
    var cancelled: [String] = []

    init(loop: any EventLoop) { self.loop = loop }

    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? {
        hello.deviceName == "stranger" ? nil : DeviceInfo(id: "tv", name: "TV", kind: .tv)
    }

    func connection(_ connection: PeerConnection, launch request: LaunchRequest, context: RequestContext) -> EventLoopFuture<(LaunchStatus, String)> {
        launches.append(request)
        context.whenCancelled { self.cancelled.append(request.uri) }
        if let slowLaunch { return slowLaunch.futureResult }
        return loop.makeSucceededFuture((request.appID == nil ? .success : .appUnavailable, ""))
    }

    func connection(
        _ connection: PeerConnection, open service: String, app: String, channelID: UInt64, context: RequestContext
    ) -> EventLoopFuture<OpenAnswer> {
        loop.makeSucceededFuture(service == "echo" ? .success(self) : .refused(.appServiceUnavailable, "no \(service)"))
    }

    func channel(_ channelID: UInt64, of connection: PeerConnection, request message: ServiceMessage, responder: ServiceResponder) {
        responder.respond(ServiceReply(status: .success, message: try? message.values.get()))
    }

    func channelClosed(_ channelID: UInt64, status: ClosedStatus) {
        closedChannels.append((channelID, status))
    }

    func connectionClosed(_ connection: PeerConnection, reason: String) {
        closedReason = reason
    }
}

/// PeerConnection over a link of values: the driver between state machine, multiplexer,
/// delegate and link, checked without a socket.
@Suite("A connection over a link of values")
struct PeerConnectionTests {
    let loop = EmbeddedEventLoop()

    func server() -> (PeerConnection, FakeLink, ValueAgent) {
        let link = FakeLink(eventLoop: loop)
        let agent = ValueAgent(loop: loop)
        let connection = PeerConnection(
            role: .server, link: link, limits: FrameLimits(maxFrameSize: 4096), delegate: agent, logger: Logger(label: "test"))
        link.session = connection
        link.establish()
        return (connection, link, agent)
    }

    func openServer() -> (PeerConnection, FakeLink, ValueAgent) {
        let (connection, link, agent) = server()
        link.receive(.hello(Hello(deviceName: "phone", maxFrameSize: 2000)))
        #expect(link.take() == [.helloAck(HelloAck(protocolVersion: 1, device: DeviceInfo(id: "tv", name: "TV", kind: .tv), maxFrameSize: 4096))])
        return (connection, link, agent)
    }

    @Test("a server answers Hello with its device; the delegate may refuse it")
    func hello() {
        let (connection, _, _) = openServer()
        #expect(connection.isOpen)
        #expect(connection.peerHello?.deviceName == "phone")
        let (_, refusedLink, _) = server()
        refusedLink.receive(.hello(Hello(deviceName: "stranger")))
        #expect(refusedLink.take() == [.goodbye(.protocolError, detail: "refused")])
        #expect(refusedLink.closed)
    }

    @Test("pipelined requests are answered, each once, whatever order their answers come in")
    func pipelined() throws {
        let (_, link, agent) = openServer()
        let slow = loop.makePromise(of: (LaunchStatus, String).self)
        agent.slowLaunch = slow
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:slow")), timeout: 0))
        agent.slowLaunch = nil
        link.receive(.launchRequest(requestID: 2, .success(LaunchRequest(uri: "media:fast")), timeout: 0))
        link.receive(.launchRequest(requestID: 3, .success(LaunchRequest(uri: "media:x", appID: "nope")), timeout: 0))
        link.receive(.launchRequest(requestID: 4, .failure(ValueError(path: "data.list[2]", reason: "expected string like list[1], got integer")), timeout: 0))
        slow.succeed((.success, ""))
        loop.run()
        #expect(link.take() == [
            .launchResponse(requestID: 2, status: .success, detail: ""),
            .launchResponse(requestID: 3, status: .appUnavailable, detail: ""),
            .launchResponse(requestID: 4, status: .unknown, detail: "bad launch data: data.list[2]: expected string like list[1], got integer"),
            .launchResponse(requestID: 1, status: .success, detail: ""),
        ])
        #expect(agent.launches.map(\.uri) == ["media:slow", "media:fast", "media:x"])
    }

    @Test("channels: opened, served, refused when not open or opened twice, closed by the peer")
    func channels() {
        let (_, link, agent) = openServer()
        link.receive(.serviceRequest(channelID: 5, requestID: 1, message: ServiceMessage(["k": "v"]), timeout: 0))
        #expect(link.take() == [.serviceResponse(
            channelID: 5, requestID: 1, reply: ServiceReply(status: .appServiceConnectionClosed, detail: "channel 5 is not open"))])
        link.receive(.openServiceRequest(requestID: 2, channelID: 5, service: "nope", app: "a", timeout: 0))
        link.receive(.openServiceRequest(requestID: 3, channelID: 5, service: "echo", app: "a", timeout: 0))
        link.receive(.openServiceRequest(requestID: 4, channelID: 5, service: "echo", app: "a", timeout: 0))
        link.receive(.serviceRequest(channelID: 5, requestID: 5, message: ServiceMessage(["k": "v"]), timeout: 0))
        #expect(link.take() == [
            .openServiceResponse(requestID: 2, status: .appServiceUnavailable, detail: "no nope"),
            .openServiceResponse(requestID: 3, status: .success, detail: ""),
            .openServiceResponse(requestID: 4, status: .unknown, detail: "channel 5 is already open"),
            .serviceResponse(channelID: 5, requestID: 5, reply: .success(["k": "v"])),
        ])
        link.receive(.closeService(channelID: 5, status: .completed))
        #expect(agent.closedChannels.map(\.0) == [5])
        #expect(agent.closedChannels.map(\.1) == [.completed])
    }

    @Test("past its channel limit an open is refused with a detail saying so; a stranger gets fewer channels")
    func channelLimit() {
        for (identity, limit) in [(PeerIdentity(authorization: .sameAccount, deviceID: nil, account: nil), 1024),
                                  (PeerIdentity(authorization: .anonymous, deviceID: nil, account: nil), 16)] {
            let link = FakeLink(eventLoop: loop)
            let connection = PeerConnection(role: .server, link: link, delegate: ValueAgent(loop: loop), logger: Logger(label: "test"))
            link.session = connection
            link.establish(identity)
            link.receive(.hello(Hello(deviceName: "phone")))
            _ = link.take()
            for channel in 1...UInt64(limit + 1) {
                link.receive(.openServiceRequest(requestID: channel, channelID: channel, service: "echo", app: "a", timeout: 0))
            }
            let answers = link.take()
            #expect(answers.count == limit + 1)
            #expect(answers.dropLast().allSatisfy { if case .openServiceResponse(_, .success, _) = $0 { true } else { false } })
            #expect(answers.last == .openServiceResponse(
                requestID: UInt64(limit + 1), status: .unknown, detail: "\(limit) channels are open on this connection, as many as it may have"))
        }
    }

    @Test("past its limit of requests in flight the connection stops reading from the peer, and reads again once half are answered")
    func inFlightLimit() {
        let (connection, link, agent) = openServer()
        let slow = loop.makePromise(of: (LaunchStatus, String).self)
        agent.slowLaunch = slow
        for id in 1...UInt64(connection.serving.requestsInFlight - 1) {
            link.receive(.launchRequest(requestID: id, .success(LaunchRequest(uri: "media:\(id)")), timeout: 0))
        }
        #expect(link.receivingPaused == nil)
        link.receive(.launchRequest(requestID: 1000, .success(LaunchRequest(uri: "media:last")), timeout: 0))
        #expect(link.receivingPaused == true)
        slow.succeed((.success, ""))
        loop.run()
        #expect(link.receivingPaused == false)
        #expect(link.take().count == connection.serving.requestsInFlight)
    }

    @Test("an answer over the peer's announced limit goes as message_size_too_large")
    func answerTooLarge() {
        let (_, link, _) = openServer()
        link.receive(.openServiceRequest(requestID: 1, channelID: 1, service: "echo", app: "a", timeout: 0))
        _ = link.take()
        link.receive(.serviceRequest(channelID: 1, requestID: 2, message: ServiceMessage(["blob": .bytes(Array(repeating: 7, count: 3000))]), timeout: 0))
        guard case .serviceResponse(1, 2, let reply)? = link.take().first else {
            Issue.record("no answer")
            return
        }
        #expect(reply.status == .messageSizeTooLarge)
        #expect(reply.detail.hasSuffix("over this client's limit of 2000"))
    }

    @Test("a client's requests wait for the HelloAck's connection; answers complete them; the end fails the rest")
    func client() throws {
        let link = FakeLink(eventLoop: loop)
        let connection = PeerConnection(role: .client, link: link, hello: Hello(deviceName: "phone"), logger: Logger(label: "test"))
        link.session = connection
        let early = connection.launch(LaunchRequest(uri: "media:x"))
        loop.run()
        #expect(throws: PeerConnectionError.closed("not connected")) { try early.wait() }
        link.establish()
        #expect(link.take() == [.hello(Hello(deviceName: "phone", maxFrameSize: UInt32(FrameLimits.defaultMaxFrameSize)))])
        let handshake = connection.handshakeDone
        link.receive(.helloAck(HelloAck(device: DeviceInfo(id: "tv", name: "TV", kind: .tv))))
        try handshake.wait()
        let launched = connection.launch(LaunchRequest(uri: "media:film"))
        let described = connection.describe()
        // Each request tells the agent how long it is waited for: the connection's 30 s here.
        #expect(link.take() == [.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:film")), timeout: 30_000), .describeRequest(requestID: 2, timeout: 30_000)])
        link.receive(.launchResponse(requestID: 1, status: .protocolUnavailable, detail: "nothing takes media:"))
        let (status, detail) = try launched.wait()
        #expect(status == .protocolUnavailable && detail == "nothing takes media:")
        link.receive(.goodbye(.shutdown, detail: "bye"))
        #expect(link.closed)
        #expect(throws: PeerConnectionError.closed("the agent shut down")) { try described.wait() }
    }

    @Test("a request not answered by the deadline its sender gave is answered timed out, and its server told to stop")
    func servingDeadline() {
        let (_, link, agent) = openServer()
        let never = loop.makePromise(of: (LaunchStatus, String).self)
        agent.slowLaunch = never
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:forever")), timeout: 1500))
        link.receive(.launchRequest(requestID: 2, .success(LaunchRequest(uri: "media:default")), timeout: 0))
        loop.advanceTime(by: .milliseconds(1499))
        #expect(link.take() == [])
        loop.advanceTime(by: .milliseconds(1))
        #expect(link.take() == [.launchResponse(requestID: 1, status: .unknown, detail: "timed out: no answer within 1500ms")])
        #expect(agent.cancelled == ["media:forever"])
        // With no deadline of its own, a request gets the agent's limit (30 s here).
        loop.advanceTime(by: .seconds(29))
        // (The silence meanwhile brought keepalive Pings.)
        #expect(link.take().filter { if case .ping = $0 { false } else { true } }
            == [.launchResponse(requestID: 2, status: .unknown, detail: "timed out: no answer within 30s")])
        #expect(agent.cancelled == ["media:forever", "media:default"])
        // A late answer is not a second one.
        never.succeed((.success, ""))
        loop.run()
        #expect(link.take() == [])
        never.futureResult.whenComplete { _ in }
    }

    @Test("a request of this end not answered by its deadline fails timed out; the answer that comes late is dropped")
    func requestDeadline() throws {
        let link = FakeLink(eventLoop: loop)
        let connection = PeerConnection(role: .client, link: link, logger: Logger(label: "test"))
        link.session = connection
        link.establish()
        link.receive(.helloAck(HelloAck()))
        _ = link.take()
        let launched = connection.launch(LaunchRequest(uri: "media:x"), deadline: loop.now + .seconds(2))
        #expect(link.take() == [.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:x")), timeout: 2000)])
        loop.advanceTime(by: .seconds(2))
        #expect(throws: PeerConnectionError.timedOut("timed out: no answer within 2s")) { try launched.wait() }
        link.receive(.launchResponse(requestID: 1, status: .success, detail: ""))
        #expect(connection.isOpen, "a late answer is no protocol error")
        // A send on a channel whose deadline passes answers unknown, saying so.
        let opened = connection.open(service: "s", app: "a", handler: ValueAgent(loop: loop))
        link.receive(.openServiceResponse(requestID: 2, status: .success, detail: ""))
        let channel = try #require(try opened.wait().channelID)
        var reply: ServiceReply?
        connection.send(channel: channel, message: ServiceMessage([:]), deadline: loop.now + .milliseconds(250)) { reply = $0 }
        loop.advanceTime(by: .milliseconds(250))
        #expect(reply == ServiceReply(status: .unknown, detail: "timed out: no answer within 250ms", cause: .timedOut))
    }

    @Test("the connection ends: whatever serves the peer's requests is told to stop")
    func endCancelsServing() {
        let (_, link, agent) = openServer()
        agent.slowLaunch = loop.makePromise()
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:slow")), timeout: 0))
        link.close()
        #expect(agent.cancelled == ["media:slow"])
        agent.slowLaunch?.succeed((.success, ""))
    }

    @Test("drain: requests from now on are refused, the one in flight is answered, then Goodbye shutdown")
    func drain() {
        let (connection, link, agent) = openServer()
        let slow = loop.makePromise(of: (LaunchStatus, String).self)
        agent.slowLaunch = slow
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:slow")), timeout: 0))
        let closed = connection.drainAndClose(.shutdown, "the agent is shutting down")
        link.receive(.launchRequest(requestID: 2, .success(LaunchRequest(uri: "media:late")), timeout: 0))
        #expect(link.take() == [.launchResponse(requestID: 2, status: .remoteSystemUnavailable, detail: "the agent is shutting down")])
        #expect(!link.closed)
        slow.succeed((.success, ""))
        loop.run()
        #expect(link.take() == [.launchResponse(requestID: 1, status: .success, detail: ""), .goodbye(.shutdown, detail: "the agent is shutting down")])
        #expect(link.closed)
        #expect(throws: Never.self) { try closed.wait() }
        #expect(agent.closedReason == "shut down")
    }
}
