import BatonCore
import BatonNet
import BatonWire
import NIOCore
import Testing

/// The conversation's rules, without sockets: frames and ticks in, what to do out.
@Suite("The session state machine")
struct SessionStateMachineTests {
    typealias Machine = SessionStateMachine
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// A server past its handshake, at `t0`.
    static func openServer(limits: FrameLimits = FrameLimits()) -> Machine {
        var server = Machine(role: .server, limits: limits, now: t0)
        #expect(server.linkEstablished(hello: nil, now: t0) == nil)
        let hello = Hello(deviceName: "phone", maxFrameSize: 4096)
        #expect(server.receive(.frame(.hello(hello)), now: t0) == .hello(hello))
        _ = server.accept(hello, answer: HelloAck())
        return server
    }

    /// A client past its handshake, at `t0`.
    static func openClient() -> Machine {
        var client = Machine(role: .client, now: t0)
        _ = client.linkEstablished(hello: Hello(), now: t0)
        _ = client.receive(.frame(.helloAck(HelloAck())), now: t0)
        return client
    }

    // MARK: the handshake

    @Test("a client says Hello with its frame limit once the link is up; the HelloAck opens the connection")
    func clientHandshake() {
        var client = Machine(role: .client, limits: FrameLimits(maxFrameSize: 2048), now: Self.t0)
        #expect(!client.isOpen)
        #expect(client.linkEstablished(hello: Hello(deviceName: "phone"), now: Self.t0) == .hello(Hello(deviceName: "phone", maxFrameSize: 2048)))
        let ack = HelloAck(device: DeviceInfo(id: "tv", name: "TV", kind: .tv), maxFrameSize: 300)
        #expect(client.receive(.frame(.helloAck(ack)), now: Self.t0) == .handshakeDone(ack))
        #expect(client.isOpen)
        #expect(client.peerLimits.maxFrameSize == 300)
    }

    @Test("a server answers Hello with version 1 and its own frame limit")
    func serverHandshake() {
        var server = Machine(role: .server, limits: FrameLimits(maxFrameSize: 65536), now: Self.t0)
        _ = server.linkEstablished(hello: nil, now: Self.t0)
        let hello = Hello(maxFrameSize: 1000)
        #expect(server.receive(.frame(.hello(hello)), now: Self.t0) == .hello(hello))
        #expect(!server.isOpen)
        let ack = server.accept(hello, answer: HelloAck(device: DeviceInfo(id: "tv", name: "TV", kind: .tv)))
        #expect(ack == .helloAck(HelloAck(protocolVersion: 1, device: DeviceInfo(id: "tv", name: "TV", kind: .tv), maxFrameSize: 65536)))
        #expect(server.isOpen)
        #expect(server.peerLimits.maxFrameSize == 1000)
    }

    @Test("bad handshakes get Goodbye and close", arguments: [
        (Machine.Role.server, Frame.hello(Hello(protocolVersion: 2)), GoodbyeReason.unsupportedVersion,
         "this agent speaks protocol version 1, not 2"),
        (.server, .ping(nonce: 1), .protocolError, "the first frame must be Hello"),
        (.server, .describeRequest(requestID: 1, timeout: 0), .protocolError, "the first frame must be Hello"),
        (.client, .hello(Hello()), .protocolError, "the first frame must be HelloAck"),
        (.client, .launchResponse(requestID: 1, status: .success, detail: ""), .protocolError, "the first frame must be HelloAck"),
    ])
    func badHandshakes(role: Machine.Role, frame: Frame, reason: GoodbyeReason, detail: String) {
        var machine = Machine(role: role, now: Self.t0)
        _ = machine.linkEstablished(hello: Hello(), now: Self.t0)
        #expect(machine.receive(.frame(frame), now: Self.t0) == .close(goodbye: .goodbye(reason, detail: detail), reason: detail))
        #expect(machine.phase == .closed)
        #expect(machine.receive(.frame(.ping(nonce: 1)), now: Self.t0) == .nothing, "nothing after the end")
    }

    @Test("a second Hello on an open connection is a protocol error; a frame before the link is up too")
    func secondHello() {
        var server = Self.openServer()
        #expect(server.receive(.frame(.hello(Hello())), now: Self.t0)
            == .close(goodbye: .goodbye(.protocolError, detail: "a second handshake on an open connection"), reason: "a second handshake on an open connection"))
        var early = Machine(role: .server, now: Self.t0)
        guard case .close(.goodbye(.protocolError, _)?, _) = early.receive(.frame(.hello(Hello())), now: Self.t0) else {
            Issue.record("a frame before the link was established was taken")
            return
        }
    }

    @Test("a Goodbye during the handshake or after ends the connection without one back")
    func goodbyeReceived() {
        var client = Machine(role: .client, now: Self.t0)
        _ = client.linkEstablished(hello: Hello(), now: Self.t0)
        #expect(client.receive(.frame(.goodbye(.protocolError, detail: "refused")), now: Self.t0)
            == .close(goodbye: nil, reason: "the peer said goodbye: refused"))
        var shutting = Self.openClient()
        #expect(shutting.receive(.frame(.goodbye(.shutdown, detail: "")), now: Self.t0) == .close(goodbye: nil, reason: "the agent shut down"))
        #expect(shutting.closedChannelStatus == .canceled)
        var lost = Self.openClient()
        #expect(lost.linkClosed("reset") == "reset")
        #expect(lost.closedChannelStatus == .unknown)
    }

    // MARK: requests

    @Test("requests are handed on and counted until answered; responses and closes go to their owners; Ping gets Pong")
    func requests() {
        var server = Self.openServer()
        let launch = Frame.launchRequest(requestID: 7, .success(LaunchRequest(uri: "media:x")), timeout: 0)
        #expect(server.receive(.frame(launch), now: Self.t0) == .request(launch))
        #expect(server.answersInFlight == 1)
        let writable = server.answered()
        #expect(writable)
        #expect(server.answersInFlight == 0)
        let response = Frame.serviceResponse(channelID: 1, requestID: 3, reply: .success([:]))
        #expect(server.receive(.frame(response), now: Self.t0) == .response(response))
        #expect(server.receive(.frame(.closeService(channelID: 4, status: .completed)), now: Self.t0) == .channelClosed(4, .completed))
        #expect(server.receive(.frame(.ping(nonce: 99)), now: Self.t0) == .write(.pong(nonce: 99)))
        #expect(server.receive(.frame(.pong(nonce: 99)), now: Self.t0) == .nothing)
    }

    @Test("oversized requests get their kind's too-large status with their ids; anything else ends the connection")
    func oversized() {
        var server = Self.openServer(limits: FrameLimits(maxFrameSize: 1000))
        let detail = "the message is 5000 bytes, over the limit of 1000"
        let cases: [(OversizedFrame, Machine.Received)] = [
            (OversizedFrame(kind: .launchRequest, requestID: 7, length: 5000),
             .write(.launchResponse(requestID: 7, status: .valueSetTooLarge, detail: detail))),
            (OversizedFrame(kind: .serviceRequest, requestID: 8, channelID: 2, length: 5000),
             .write(.serviceResponse(channelID: 2, requestID: 8, reply: ServiceReply(status: .messageSizeTooLarge, detail: detail)))),
            (OversizedFrame(kind: .openServiceRequest, requestID: 9, channelID: 3, length: 5000),
             .write(.openServiceResponse(requestID: 9, status: .unknown, detail: detail))),
            (OversizedFrame(kind: .describeRequest, requestID: 10, length: 5000), .write(.describeResponse(requestID: 10, .success(nil)))),
        ]
        for (oversized, expected) in cases {
            #expect(server.receive(.oversized(oversized), now: Self.t0) == expected)
        }
        #expect(server.isOpen)
        let ping = OversizedFrame(kind: .other, length: 5000, fieldNumber: 12)
        #expect(server.receive(.oversized(ping), now: Self.t0)
            == .close(goodbye: .goodbye(.frameTooLarge, detail: "\(ping)"), reason: "\(ping)"))
    }

    @Test("an answer over the peer's limit becomes its kind's too-large status; a describe keeps its device")
    func fallbacks() {
        let tv = DeviceInfo(id: "tv", name: "TV", kind: .tv)
        let full = Frame.describeResponse(requestID: 1, .success(DeviceDescription(device: tv, apps: [AppInfo(id: "a", name: "A")])))
        #expect(Machine.fallback(for: full, size: 9000, limit: 4096) == .describeResponse(requestID: 1, .success(DeviceDescription(device: tv))))
        let reply = Frame.serviceResponse(channelID: 2, requestID: 3, reply: .success(["big": "…"]))
        #expect(Machine.fallback(for: reply, size: 9000, limit: 4096) == .serviceResponse(
            channelID: 2, requestID: 3,
            reply: ServiceReply(status: .messageSizeTooLarge, detail: "the answer is 9000 bytes, over this client's limit of 4096")))
        #expect(Machine.fallback(for: .ping(nonce: 1), size: 9000, limit: 4096) == nil)
    }

    // MARK: draining

    @Test("while draining, every kind of request gets its shutting-down status; answers in flight still go out")
    func draining() {
        var server = Self.openServer()
        let launch = Frame.launchRequest(requestID: 1, .success(LaunchRequest(uri: "media:x")), timeout: 0)
        _ = server.receive(.frame(launch), now: Self.t0)
        server.drain()
        #expect(!server.isDrained, "one answer is still in flight")
        let detail = "the agent is shutting down"
        let refusals: [(Frame, Frame)] = [
            (.describeRequest(requestID: 2, timeout: 0), .describeResponse(requestID: 2, .success(nil))),
            (.launchRequest(requestID: 3, .success(LaunchRequest(uri: "x:")), timeout: 0), .launchResponse(requestID: 3, status: .remoteSystemUnavailable, detail: detail)),
            (.openServiceRequest(requestID: 4, channelID: 1, service: "s", app: "a", timeout: 0), .openServiceResponse(requestID: 4, status: .remoteSystemUnavailable, detail: detail)),
            (.serviceRequest(channelID: 1, requestID: 5, message: ServiceMessage([:]), timeout: 0),
             .serviceResponse(channelID: 1, requestID: 5, reply: ServiceReply(status: .remoteSystemUnavailable, detail: detail))),
            (.joinRequest(requestID: 6, JoinRequest(inviteSecret: [], deviceID: "", deviceName: "", publicKey: []), timeout: 0),
             .joinResponse(requestID: 6, JoinAnswer(status: .unknown, detail: detail))),
        ]
        for (request, refusal) in refusals {
            #expect(server.receive(.frame(request), now: Self.t0) == .write(refusal))
        }
        let inFlight = server.answered()
        #expect(inFlight, "the answer in flight may still be written")
        #expect(server.isDrained)
        #expect(server.goodbye(.shutdown, "the agent is shutting down") == .close(
            goodbye: .goodbye(.shutdown, detail: "the agent is shutting down"), reason: "shut down"))
        let afterTheEnd = server.answered()
        #expect(!afterTheEnd, "nothing is written after the end")
    }

    // MARK: time

    @Test("keepalive: a Ping after 15 s of silence and again after 15 s more, Goodbye timeout at 45 s; traffic starts over")
    func keepalive() {
        var client = Self.openClient()
        let t0 = Self.t0
        #expect(client.nextDeadline == t0 + .seconds(15))
        #expect(client.tick(now: t0 + .seconds(14)) == .nothing)
        #expect(client.tick(now: t0 + .seconds(15)) == .write(.ping(nonce: 1)))
        #expect(client.tick(now: t0 + .seconds(16)) == .nothing, "one Ping per silence")
        #expect(client.nextDeadline == t0 + .seconds(30))
        #expect(client.tick(now: t0 + .seconds(30)) == .write(.ping(nonce: 2)))
        #expect(client.nextDeadline == t0 + .seconds(45))
        #expect(client.tick(now: t0 + .seconds(45)) == .close(
            goodbye: .goodbye(.timeout, detail: "the peer was silent for 45 s"), reason: "the peer was silent for 45 s"))

        var talking = Self.openClient()
        _ = talking.tick(now: t0 + .seconds(15))
        _ = talking.receive(.frame(.pong(nonce: 1)), now: t0 + .seconds(16))
        #expect(talking.nextDeadline == t0 + .seconds(31))
        #expect(talking.tick(now: t0 + .seconds(44)) == .write(.ping(nonce: 2)))
        #expect(talking.tick(now: t0 + .seconds(61)) == .close(
            goodbye: .goodbye(.timeout, detail: "the peer was silent for 45 s"), reason: "the peer was silent for 45 s"))
    }

    @Test("a server drops a client that says no Hello within the hello timeout")
    func helloTimeout() {
        var timing = Machine.Timing()
        timing.helloTimeout = .seconds(2)
        var server = Machine(role: .server, timing: timing, now: Self.t0)
        // Before the link is up (a TLS handshake), the same limit: a handshake that never
        // finishes is closed, with nothing said (nothing can be).
        #expect(server.nextDeadline == Self.t0 + .seconds(2))
        var silent = server
        #expect(silent.tick(now: Self.t0 + .seconds(2)) == .close(goodbye: nil, reason: "no TLS handshake within 2 s"))
        _ = server.linkEstablished(hello: nil, now: Self.t0)
        #expect(server.nextDeadline == Self.t0 + .seconds(2))
        #expect(server.tick(now: Self.t0 + .seconds(1)) == .nothing)
        #expect(server.tick(now: Self.t0 + .seconds(2)) == .close(
            goodbye: .goodbye(.timeout, detail: "no Hello within 2 s"), reason: "no Hello within 2 s"))
        #expect(server.nextDeadline == nil)
    }
}

@Suite("The request and channel multiplexer")
struct RequestMultiplexerTests {
    final class Handler: ServiceChannelHandler, @unchecked Sendable {
        func channel(_ channelID: UInt64, of connection: PeerConnection, request message: ServiceMessage, responder: ServiceResponder) {}
        func channelClosed(_ channelID: UInt64, status: ClosedStatus) {}
    }

    final class Told: @unchecked Sendable {
        var results: [UInt64: Result<Frame, PeerConnectionError>] = [:]
    }

    @Test("request ids are one space across kinds; each answer reaches its waiter once")
    func requests() {
        var mux = RequestMultiplexer()
        let told = Told()
        let a = mux.makeRequestID(), b = mux.makeRequestID()
        #expect((a, b) == (1, 2))
        mux.await(a, until: .distantFuture, timeout: .seconds(30)) { told.results[a] = $0 }
        mux.await(b, until: .distantFuture, timeout: .seconds(30)) { told.results[b] = $0 }
        let answer = Frame.launchResponse(requestID: b, status: .success, detail: "")
        mux.complete(answer, at: .now())?.run()
        #expect(told.results[b] == .success(answer))
        #expect(mux.complete(answer, at: .now()) == nil, "answered once")
        #expect(mux.complete(.describeResponse(requestID: 99, .success(nil)), at: .now()) == nil, "nobody waits for 99")
        #expect(mux.pendingCount == 1)
    }

    @Test("an answer that comes after its request's deadline is the timeout, in the sender's words")
    func lateAnswer() {
        var mux = RequestMultiplexer()
        let told = Told()
        let id = mux.makeRequestID()
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        mux.await(id, until: start + .seconds(1), timeout: .seconds(1)) { told.results[id] = $0 }
        // The receiver's own timeout answer, counted from when it read the request: a little later.
        let late = Frame.launchResponse(requestID: id, status: .unknown, detail: "timed out: no answer within 974ms")
        mux.complete(late, at: start + .milliseconds(1001))?.run()
        #expect(told.results[id] == .failure(.timedOut("timed out: no answer within 1s")))
    }

    @Test("closing a channel answers its pending requests app_service_connection_closed; the end fails the rest")
    func channels() {
        var mux = RequestMultiplexer()
        let told = Told()
        let channel = mux.makeChannelID()
        mux.open(channel, handler: Handler())
        #expect(mux.isOpen(channel))
        let onChannel = mux.makeRequestID(), elsewhere = mux.makeRequestID()
        mux.await(onChannel, channel: channel, until: .distantFuture, timeout: .seconds(30)) { told.results[onChannel] = $0 }
        mux.await(elsewhere, until: .distantFuture, timeout: .seconds(30)) { told.results[elsewhere] = $0 }
        let closed = mux.close(channel)
        #expect(closed != nil)
        for completion in closed?.completions ?? [] { completion.run() }
        #expect(told.results[onChannel] == .success(.serviceResponse(
            channelID: channel, requestID: onChannel,
            reply: ServiceReply(status: .appServiceConnectionClosed, detail: "the channel closed before the answer came"))))
        #expect(mux.close(channel) == nil, "closed once")
        let other = mux.makeChannelID()
        mux.open(other, handler: Handler())
        let (completions, open) = mux.fail(.closed("reset"))
        for completion in completions { completion.run() }
        #expect(told.results[elsewhere] == .failure(.closed("reset")))
        #expect(open.map(\.id) == [other])
        #expect(!mux.isOpen(other))
    }
}
