import BatonWire
import Logging
import NIOCore

/// Why a request got no response.
public enum PeerConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection ended first; `reason` says how.
    case closed(String)
    /// The message is over the size the peer accepts: it was not sent.
    case tooLarge(size: Int, limit: Int)
    /// The channel is not open on this connection.
    case noSuchChannel(UInt64)

    public var description: String {
        switch self {
        case .closed(let reason): "connection closed: \(reason)"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the peer's limit of \(limit) bytes"
        case .noSuchChannel(let id): "channel \(id) is not open"
        }
    }
}

/// One end of a Baton connection (Protocol/baton.proto): the handshake, request ids and their
/// responses, app-service channels in both directions, keepalive, and the statuses everything
/// pending gets when the connection ends. Lives on its channel's event loop.
public final class PeerConnection: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = FrameEvent
    public typealias OutboundOut = ByteBuffer

    /// Which end this is.
    public enum Role: Sendable { case client, server }

    /// Timings; the defaults are the protocol's.
    public struct Timing: Sendable {
        /// An agent drops a client that has not said Hello by then.
        public var helloTimeout: TimeAmount = .seconds(10)
        /// Silence after which this end sends a Ping.
        public var pingAfter: TimeAmount = .seconds(15)
        /// Silence after which the peer is taken for dead.
        public var deadAfter: TimeAmount = .seconds(45)
        public init() {}
    }

    public let role: Role
    public let eventLoop: any EventLoop
    public let logger: Logger
    /// What the other end asks of this one.
    public var delegate: (any PeerConnectionDelegate)?
    /// The peer's HelloAck (on a client) or Hello (on a server), once received.
    public private(set) var peerHelloAck: Baton_V1_HelloAck?
    public private(set) var peerHello: Baton_V1_Hello?
    /// The remote address, for logs.
    public private(set) var remoteAddress: SocketAddress?

    private let ownLimits: FrameLimits
    private var peerLimits = FrameLimits()
    private let timing: Timing
    private let hello: Baton_V1_Hello?
    private var context: ChannelHandlerContext?
    private var handshake: EventLoopPromise<Void>?
    private var open = false
    private var closedReason: String?
    private var goodbyeReason: Baton_V1_Goodbye.Reason?
    private var nextRequestID: UInt64 = 1
    private var nextChannelID: UInt64 = 1
    private var pending: [UInt64: (channel: UInt64?, promise: EventLoopPromise<Baton_V1_Frame>)] = [:]
    /// Open app-service channels.
    public private(set) var channels: Set<UInt64> = []
    private var lastRead = NIODeadline.now()
    private var keepalive: RepeatedTask?
    private var pingNonce: UInt64 = 0
    /// Frames written and not yet flushed; see ``flushOutbox()``.
    private var outbox: ByteBuffer?
    private var flushScheduled = false
    /// Requests from the peer not yet answered.
    private var answersInFlight = 0
    /// Set while shutting down: new requests are refused, answers in flight still go out.
    private var draining = false
    private var drained: (() -> Void)?

    /// A client end that says `hello` once connected, or a server end (`hello` nil).
    public init(role: Role, eventLoop: any EventLoop, hello: Baton_V1_Hello? = nil, limits: FrameLimits = FrameLimits(),
                timing: Timing = Timing(), delegate: (any PeerConnectionDelegate)? = nil, logger: Logger) {
        self.role = role
        self.eventLoop = eventLoop
        self.hello = hello
        self.ownLimits = limits
        self.timing = timing
        self.delegate = delegate
        self.logger = logger
        if role == .client { handshake = eventLoop.makePromise() }
    }

    /// Completes when the handshake is done (client end), or fails if the connection ends first.
    public var handshakeDone: EventLoopFuture<Void> {
        handshake?.futureResult ?? eventLoop.makeSucceededVoidFuture()
    }

    /// Whether the connection is open and past its handshake.
    public var isOpen: Bool { open && closedReason == nil }

    // MARK: channel events

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        remoteAddress = context.channel.remoteAddress
    }

    public func channelActive(context: ChannelHandlerContext) {
        remoteAddress = context.channel.remoteAddress
        lastRead = .now()
        switch role {
        case .client:
            var frame = Baton_V1_Frame()
            frame.hello = hello ?? Baton_V1_Hello.with { $0.protocolVersion = 1 }
            frame.hello.maxFrameSize = UInt32(ownLimits.maxFrameSize)
            write(frame)
        case .server:
            context.eventLoop.scheduleTask(in: timing.helloTimeout) { [self] in
                if !open && closedReason == nil { goodbye(.timeout, "no Hello within \(timing.helloTimeout.seconds) s") }
            }
        }
        keepalive = context.eventLoop.scheduleRepeatedTask(initialDelay: timing.pingAfter, delay: timing.pingAfter) { [self] _ in
            checkLiveness()
        }
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        shutDown(reason: closedReason ?? "the peer closed the connection")
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let wire = error as? WireError, case .protocolError(let reason) = wire {
            logger.warning("closing connection", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "reason": "\(reason)"])
            goodbye(.protocolError, reason)
        } else {
            logger.warning("connection error", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "error": "\(error)"])
            closedReason = closedReason ?? "\(error)"
            closeContext()
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = .now()
        switch unwrapInboundIn(data) {
        case .oversized(let oversized):
            answerOversized(oversized)
        case .frame(let frame):
            receive(frame)
        }
    }

    private func checkLiveness() {
        let silent = NIODeadline.now() - lastRead
        if silent >= timing.deadAfter {
            closedReason = "the peer was silent for \(silent.seconds) s"
            closeContext()
        } else if silent >= timing.pingAfter, open {
            pingNonce &+= 1
            var frame = Baton_V1_Frame()
            frame.ping = .with { $0.nonce = pingNonce }
            write(frame)
        }
    }

    // MARK: receiving

    private func receive(_ frame: Baton_V1_Frame) {
        guard let body = frame.body else { return }
        if !open {
            switch (role, body) {
            case (.server, .hello(let hello)):
                receiveHello(hello)
            case (.client, .helloAck(let ack)):
                peerHelloAck = ack
                peerLimits = FrameLimits(announced: ack.maxFrameSize)
                open = true
                handshake?.succeed()
            case (_, .goodbye(let goodbye)):
                receiveGoodbye(goodbye)
            default:
                goodbye(.protocolError, role == .server ? "the first frame must be Hello" : "the first frame must be HelloAck")
            }
            return
        }
        if draining, Self.isRequest(body) {
            refuseWhileDraining(body)
            return
        }
        switch body {
        case .hello, .helloAck:
            goodbye(.protocolError, "a second handshake on an open connection")
        case .describeRequest(let request):
            let future = delegate?.connection(self, describe: request)
            answer(future, frame: { r in Baton_V1_Frame.with { $0.describeResponse = r } }) { full, _ in
                // Too large with its apps: the device alone still answers.
                var device = Baton_V1_DescribeResponse()
                device.requestID = request.requestID
                if let full { device.device = full.device }
                return Baton_V1_Frame.with { $0.describeResponse = device }
            }
        case .launchRequest(let request):
            answer(delegate?.connection(self, launch: request), frame: { r in Baton_V1_Frame.with { $0.launchResponse = r } }) { _, detail in
                Baton_V1_Frame.with {
                    $0.launchResponse = .with { $0.requestID = request.requestID; $0.status = .unknown; $0.detail = detail }
                }
            }
        case .openServiceRequest(let request):
            guard !channels.contains(request.channelID) else {
                respond(Baton_V1_Frame.with {
                    $0.openServiceResponse = .with { r in
                        r.requestID = request.requestID
                        r.status = .unknown
                        r.detail = "channel \(request.channelID) is already open"
                    }
                })
                return
            }
            let future = delegate?.connection(self, open: request)
            answer(future, frame: { r in Baton_V1_Frame.with { $0.openServiceResponse = r } }) { _, detail in
                Baton_V1_Frame.with {
                    $0.openServiceResponse = .with { $0.requestID = request.requestID; $0.status = .unknown; $0.detail = detail }
                }
            }
            future?.whenSuccess { [self] response in
                if response.status == .success && isOpen { channels.insert(request.channelID) }
            }
        case .serviceRequest(let request):
            guard channels.contains(request.channelID) else {
                respond(Baton_V1_Frame.with {
                    $0.serviceResponse = .with { r in
                        r.channelID = request.channelID
                        r.requestID = request.requestID
                        r.status = .appServiceConnectionClosed
                        r.detail = "channel \(request.channelID) is not open"
                    }
                })
                return
            }
            answer(delegate?.connection(self, request: request), frame: { r in Baton_V1_Frame.with { $0.serviceResponse = r } }) { tooLarge, detail in
                Baton_V1_Frame.with {
                    $0.serviceResponse = .with {
                        $0.channelID = request.channelID
                        $0.requestID = request.requestID
                        $0.status = tooLarge != nil ? .messageSizeTooLarge : .failure
                        $0.detail = detail
                    }
                }
            }
        case .closeService(let close):
            guard channels.remove(close.channelID) != nil else { return }
            finishChannel(close.channelID, status: close.status)
        case .ping(let ping):
            write(Baton_V1_Frame.with { $0.pong = .with { $0.nonce = ping.nonce } })
        case .pong:
            break
        case .goodbye(let goodbye):
            receiveGoodbye(goodbye)
        case .describeResponse(let r): complete(r.requestID, frame)
        case .launchResponse(let r): complete(r.requestID, frame)
        case .openServiceResponse(let r): complete(r.requestID, frame)
        case .serviceResponse(let r): complete(r.requestID, frame)
        }
    }

    private static func isRequest(_ body: Baton_V1_Frame.OneOf_Body) -> Bool {
        switch body {
        case .describeRequest, .launchRequest, .openServiceRequest, .serviceRequest: true
        default: false
        }
    }

    /// While shutting down, a new request gets a status at once.
    private func refuseWhileDraining(_ body: Baton_V1_Frame.OneOf_Body) {
        let detail = "the agent is shutting down"
        switch body {
        case .describeRequest(let r):
            write(.with { $0.describeResponse = .with { $0.requestID = r.requestID } })
        case .launchRequest(let r):
            write(.with { $0.launchResponse = .with { $0.requestID = r.requestID; $0.status = .remoteSystemUnavailable; $0.detail = detail } })
        case .openServiceRequest(let r):
            write(.with { $0.openServiceResponse = .with { $0.requestID = r.requestID; $0.status = .remoteSystemUnavailable; $0.detail = detail } })
        case .serviceRequest(let r):
            write(.with {
                $0.serviceResponse = .with {
                    $0.channelID = r.channelID
                    $0.requestID = r.requestID
                    $0.status = .remoteSystemUnavailable
                    $0.detail = detail
                }
            })
        default:
            break
        }
    }

    private func receiveHello(_ hello: Baton_V1_Hello) {
        peerHello = hello
        guard hello.protocolVersion == 1 else {
            goodbye(.unsupportedVersion, "this agent speaks protocol version 1, not \(hello.protocolVersion)")
            return
        }
        guard var ack = delegate?.connection(self, hello: hello) else {
            goodbye(.protocolError, "refused")
            return
        }
        ack.protocolVersion = 1
        ack.maxFrameSize = UInt32(ownLimits.maxFrameSize)
        peerLimits = FrameLimits(announced: hello.maxFrameSize)
        open = true
        write(Baton_V1_Frame.with { $0.helloAck = ack })
    }

    private func receiveGoodbye(_ goodbye: Baton_V1_Goodbye) {
        goodbyeReason = goodbye.reason
        let detail = goodbye.detail.isEmpty ? "\(goodbye.reason)" : goodbye.detail
        closedReason = goodbye.reason == .shutdown ? "the agent shut down" : "the peer said goodbye: \(detail)"
        closeContext()
    }

    /// Sends the delegate's answer once it is ready (if the connection is still there). A
    /// failed future, or an answer over the peer's frame limit, is answered with `fallback`'s
    /// frame instead (a status saying so): every request gets exactly one response.
    private func answer<R>(
        _ future: EventLoopFuture<R>?, frame: @escaping @Sendable (R) -> Baton_V1_Frame,
        fallback: @escaping @Sendable (_ tooLarge: R?, _ detail: String) -> Baton_V1_Frame
    ) {
        guard let future else { return }
        answersInFlight += 1
        future.whenComplete { [self] result in
            answersInFlight -= 1
            defer { if answersInFlight == 0 { drained?() } }
            guard isOpen || draining else { return }
            switch result {
            case .success(let response):
                switch write(frame(response)) {
                case .tooLarge(let size, let limit)?:
                    logger.warning("answer over the peer's frame limit", metadata: ["size": "\(size)", "limit": "\(limit)"])
                    write(fallback(response, "the answer is \(size) bytes, over this client's limit of \(limit)"))
                default:
                    break
                }
            case .failure(let error):
                write(fallback(nil, "\(error)"))
            }
        }
    }

    private func respond(_ frame: Baton_V1_Frame) {
        guard isOpen else { return }
        write(frame)
    }

    private func answerOversized(_ oversized: OversizedFrame) {
        logger.warning("frame over the size limit", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "frame": "\(oversized)"])
        guard isOpen, let id = oversized.requestID else {
            goodbye(.frameTooLarge, "\(oversized)")
            return
        }
        let detail = "the message is \(oversized.length) bytes, over the limit of \(ownLimits.maxFrameSize)"
        switch oversized.kind {
        case .launchRequest:
            respond(.with { $0.launchResponse = .with { $0.requestID = id; $0.status = .valueSetTooLarge; $0.detail = detail } })
        case .serviceRequest:
            respond(.with {
                $0.serviceResponse = .with {
                    $0.requestID = id
                    $0.channelID = oversized.channelID ?? 0
                    $0.status = .messageSizeTooLarge
                    $0.detail = detail
                }
            })
        case .openServiceRequest:
            respond(.with { $0.openServiceResponse = .with { $0.requestID = id; $0.status = .unknown; $0.detail = detail } })
        case .describeRequest:
            respond(.with { $0.describeResponse = .with { $0.requestID = id } })
        case .other:
            goodbye(.frameTooLarge, "\(oversized)")
        }
    }

    private func complete(_ requestID: UInt64, _ frame: Baton_V1_Frame) {
        guard let entry = pending.removeValue(forKey: requestID) else {
            logger.debug("response to no pending request", metadata: ["request": "\(requestID)"])
            return
        }
        entry.promise.succeed(frame)
    }

    // MARK: sending

    @discardableResult
    private func write(_ frame: Baton_V1_Frame) -> PeerConnectionError? {
        guard let context, closedReason == nil else { return .closed(closedReason ?? "not connected") }
        // Taken out while written to, so the buffer is never copied on write.
        var buffer = outbox ?? context.channel.allocator.buffer(capacity: 256)
        outbox = nil
        defer { outbox = buffer }
        do {
            try FrameEncoder.encode(frame, into: &buffer, maxFrameSize: peerLimits.maxFrameSize)
        } catch {
            if case .frameTooLarge(let size, let limit) = error { return .tooLarge(size: size, limit: limit) }
            return .closed("\(error)")
        }
        if !flushScheduled {
            flushScheduled = true
            eventLoop.execute { [self] in flushOutbox() }
        }
        return nil
    }

    /// Closes the socket after what is already written.
    private func closeContext() {
        flushOutbox()
        context?.close(promise: nil)
    }

    /// Hands every frame written since the last flush to the socket in one write: answers to a
    /// batch of pipelined requests cost one system call, not one each.
    private func flushOutbox() {
        flushScheduled = false
        guard let context, let buffer = outbox, buffer.readableBytes > 0 else { return }
        outbox = nil
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// Sends a request built by `build` with a fresh request id; the future gets the response
    /// frame, or fails with ``PeerConnectionError``.
    private func request(channel: UInt64? = nil, _ build: (UInt64) -> Baton_V1_Frame) -> EventLoopFuture<Baton_V1_Frame> {
        eventLoop.preconditionInEventLoop()
        guard isOpen else { return eventLoop.makeFailedFuture(PeerConnectionError.closed(closedReason ?? "not connected")) }
        let id = nextRequestID
        nextRequestID += 1
        let promise = eventLoop.makePromise(of: Baton_V1_Frame.self)
        if let error = write(build(id)) {
            promise.fail(error)
        } else {
            pending[id] = (channel, promise)
        }
        return promise.futureResult
    }

    /// Asks for the device and its apps.
    public func describe() -> EventLoopFuture<Baton_V1_DescribeResponse> {
        request { id in .with { $0.describeRequest = .with { $0.requestID = id } } }.map { $0.describeResponse }
    }

    /// Asks the peer to launch; `request.requestID` is set here.
    public func launch(_ request: Baton_V1_LaunchRequest) -> EventLoopFuture<Baton_V1_LaunchResponse> {
        self.request { id in .with { var r = request; r.requestID = id; $0.launchRequest = r } }.map { $0.launchResponse }
    }

    /// Opens a channel to `service` of `app`; on SUCCESS the channel is open under the
    /// returned id.
    public func open(service: String, app: String) -> EventLoopFuture<(channelID: UInt64, response: Baton_V1_OpenServiceResponse)> {
        let channelID = nextChannelID
        nextChannelID += 1
        return request { id in
            .with {
                $0.openServiceRequest = .with {
                    $0.requestID = id
                    $0.channelID = channelID
                    $0.serviceName = service
                    $0.appID = app
                }
            }
        }.map { [self] frame in
            let response = frame.openServiceResponse
            if response.status == .success { channels.insert(channelID) }
            return (channelID, response)
        }
    }

    /// Sends a request on an open channel (either end may).
    public func send(channel: UInt64, message: Baton_V1_Dictionary) -> EventLoopFuture<Baton_V1_ServiceResponse> {
        guard channels.contains(channel) else { return eventLoop.makeFailedFuture(PeerConnectionError.noSuchChannel(channel)) }
        return request(channel: channel) { id in
            .with {
                $0.serviceRequest = .with {
                    $0.channelID = channel
                    $0.requestID = id
                    $0.message = message
                }
            }
        }.map { $0.serviceResponse }
    }

    /// Closes a channel from this end: the peer hears `status`; requests this end still waits
    /// for on it get APP_SERVICE_CONNECTION_CLOSED. The delegate is not told (this end knows).
    public func close(channel: UInt64, status: Baton_V1_ClosedStatus = .completed) {
        guard channels.remove(channel) != nil else { return }
        write(.with { $0.closeService = .with { $0.channelID = channel; $0.status = status } })
        failRequests(onChannel: channel)
    }

    private func finishChannel(_ channel: UInt64, status: Baton_V1_ClosedStatus) {
        failRequests(onChannel: channel)
        delegate?.connection(self, channelClosed: channel, status: status)
    }

    private func failRequests(onChannel channel: UInt64) {
        for (id, entry) in pending where entry.channel == channel {
            pending[id] = nil
            entry.promise.succeed(.with {
                $0.serviceResponse = .with {
                    $0.channelID = channel
                    $0.requestID = id
                    $0.status = .appServiceConnectionClosed
                    $0.detail = "the channel closed before the answer came"
                }
            })
        }
    }

    /// The connection never came up (refused, timed out): fail the handshake.
    func abandon(_ error: any Error) {
        handshake?.fail(error)
        handshake = nil
        closedReason = closedReason ?? "\(error)"
    }

    /// Shuts down gracefully: requests from the peer are no longer taken, the ones in flight
    /// get their answers (for up to `grace`), then Goodbye `reason` and close. The future
    /// completes when the connection is closed.
    public func drainAndClose(_ reason: Baton_V1_Goodbye.Reason, _ detail: String, grace: TimeAmount = .seconds(5)) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        guard let context, closedReason == nil else { return eventLoop.makeSucceededVoidFuture() }
        let closed = context.channel.closeFuture
        draining = true
        let finish = { [self] in
            drained = nil
            goodbye(reason, detail)
        }
        if answersInFlight == 0 {
            finish()
        } else {
            drained = finish
            eventLoop.scheduleTask(in: grace) { [self] in drained?() }
        }
        return closed
    }

    /// Says goodbye with `reason` and closes.
    public func goodbye(_ reason: Baton_V1_Goodbye.Reason, _ detail: String) {
        guard closedReason == nil else { return }
        write(.with { $0.goodbye = .with { $0.reason = reason; $0.detail = detail } })
        goodbyeReason = reason
        closedReason = reason == .shutdown ? "shut down" : detail
        closeContext()
    }

    private func shutDown(reason: String) {
        guard keepalive != nil || open || handshake != nil || !pending.isEmpty else { return }
        closedReason = closedReason ?? reason
        open = false
        keepalive?.cancel()
        keepalive = nil
        handshake?.fail(PeerConnectionError.closed(reason))
        handshake = nil
        let requests = pending
        pending = [:]
        for (_, entry) in requests { entry.promise.fail(PeerConnectionError.closed(reason)) }
        let status: Baton_V1_ClosedStatus = goodbyeReason == .shutdown ? .canceled : .unknown
        let open = channels
        channels = []
        for channel in open.sorted() { delegate?.connection(self, channelClosed: channel, status: status) }
        delegate?.connectionClosed(self, reason: reason)
        delegate = nil
    }
}

extension TimeAmount {
    /// Whole seconds, for messages.
    var seconds: Int64 { nanoseconds / 1_000_000_000 }
}
