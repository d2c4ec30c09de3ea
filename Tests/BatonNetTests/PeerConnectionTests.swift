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
    /// The largest frame the peer takes, as written frames see it.

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

    init(loop: any EventLoop) { self.loop = loop }

    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? {
        hello.deviceName == "stranger" ? nil : DeviceInfo(id: "tv", name: "TV", kind: .tv)
    }

    func connection(_ connection: PeerConnection, launch request: LaunchRequest) -> EventLoopFuture<(LaunchStatus, String)> {
        launches.append(request)
        if let slowLaunch { return slowLaunch.futureResult }
        return loop.makeSucceededFuture((request.appID == nil ? .success : .appUnavailable, ""))
    }

    func connection(_ connection: PeerConnection, open service: String, app: String, channelID: UInt64) -> EventLoopFuture<OpenAnswer> {
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
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:slow"))))
        agent.slowLaunch = nil
        link.receive(.launchRequest(requestID: 2, .success(LaunchRequest(uri: "media:fast"))))
        link.receive(.launchRequest(requestID: 3, .success(LaunchRequest(uri: "media:x", appID: "nope"))))
        link.receive(.launchRequest(requestID: 4, .failure(ValueError(path: "data.list[2]", reason: "expected string like list[1], got integer"))))
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
        link.receive(.serviceRequest(channelID: 5, requestID: 1, message: ServiceMessage(["k": "v"])))
        #expect(link.take() == [.serviceResponse(
            channelID: 5, requestID: 1, reply: ServiceReply(status: .appServiceConnectionClosed, detail: "channel 5 is not open"))])
        link.receive(.openServiceRequest(requestID: 2, channelID: 5, service: "nope", app: "a"))
        link.receive(.openServiceRequest(requestID: 3, channelID: 5, service: "echo", app: "a"))
        link.receive(.openServiceRequest(requestID: 4, channelID: 5, service: "echo", app: "a"))
        link.receive(.serviceRequest(channelID: 5, requestID: 5, message: ServiceMessage(["k": "v"])))
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

    @Test("an answer over the peer's announced limit goes as message_size_too_large")
    func answerTooLarge() {
        let (_, link, _) = openServer()
        link.receive(.openServiceRequest(requestID: 1, channelID: 1, service: "echo", app: "a"))
        _ = link.take()
        link.receive(.serviceRequest(channelID: 1, requestID: 2, message: ServiceMessage(["blob": .bytes(Array(repeating: 7, count: 3000))])))
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
        #expect(link.take() == [.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:film"))), .describeRequest(requestID: 2)])
        link.receive(.launchResponse(requestID: 1, status: .protocolUnavailable, detail: "nothing takes media:"))
        let (status, detail) = try launched.wait()
        #expect(status == .protocolUnavailable && detail == "nothing takes media:")
        link.receive(.goodbye(.shutdown, detail: "bye"))
        #expect(link.closed)
        #expect(throws: PeerConnectionError.closed("the agent shut down")) { try described.wait() }
    }

    @Test("drain: requests from now on are refused, the one in flight is answered, then Goodbye shutdown")
    func drain() {
        let (connection, link, agent) = openServer()
        let slow = loop.makePromise(of: (LaunchStatus, String).self)
        agent.slowLaunch = slow
        link.receive(.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:slow"))))
        let closed = connection.drainAndClose(.shutdown, "the agent is shutting down")
        link.receive(.launchRequest(requestID: 2, .success(LaunchRequest(uri: "media:late"))))
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
