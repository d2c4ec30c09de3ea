import BatonCore
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// Why a request got no response.
public enum PeerConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection ended first; `reason` says how.
    case closed(String)
    /// The message is over the size the peer accepts: it was not sent.
    case tooLarge(size: Int, limit: Int)
    /// The channel is not open on this connection.
    case noSuchChannel(UInt64)
    /// This end refused the peer's certificate (another account, another device, expired,
    /// revoked); `reason` says which.
    case untrustedPeer(String)
    /// The peer refused this end: its certificate, the protocol (TLS or not), or what it sent.
    case refusedByPeer(String)

    public var description: String {
        switch self {
        case .closed(let reason): "connection closed: \(reason)"
        case .tooLarge(let size, let limit): "message of \(size) bytes is over the peer's limit of \(limit) bytes"
        case .noSuchChannel(let id): "channel \(id) is not open"
        case .untrustedPeer(let reason): "refused the agent: \(reason)"
        case .refusedByPeer(let reason): reason
        }
    }
}

/// One end of a Baton connection (Protocol/baton.proto): the framing, the handshake, request
/// ids and their responses, app-service channels in both directions, keepalive, and the
/// statuses everything pending gets when the connection ends. Lives on its channel's event
/// loop, as the first handler of its pipeline: it takes the socket's bytes and splits them into
/// frames with a ``FrameDecoder`` itself, as `ByteToMessageHandler` would, without handing
/// every frame through the pipeline.
public final class PeerConnection: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer
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
        /// How long the event loop keeps polling the socket after traffic instead of sleeping,
        /// so that an answer or the next request is read without waiting for a CPU to wake
        /// (see ``BusyPoll``). Zero lets the loop sleep at once. Costs at most this much CPU
        /// time after each burst of traffic; Linux's own `busy_poll` suggests 50 µs.
        public var busyPoll: TimeAmount = .microseconds(50)
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
    /// Who the peer proved to be in the TLS handshake (before Hello): `same_account` or
    /// `anonymous`, its device id and account. On an insecure connection, `same_account` with
    /// no id.
    public internal(set) var peerIdentity: PeerIdentity?
    /// Why this end refused the peer's certificate, when it did.
    var refusal: String?
    /// Judges the peer and keeps the revocation list Hello carries; nil on an insecure connection.
    let trustStore: TrustStore?
    /// Called after this connection adopted a newer revocation list from its peer.
    var revocationListAdopted: (() -> Void)?

    private let ownLimits: FrameLimits
    /// Splits the bytes read into frames.
    private var frameDecoder: FrameDecoder
    /// Bytes read and not yet decoded.
    private var inbound: ByteBuffer?
    /// Set while frames are being decoded and handled: bytes that arrive meanwhile (a re-entrant
    /// read) wait for that loop.
    private var decodingInbound = false
    /// The decoding error that stopped reading, if one has.
    private var inboundError: (any Error)?
    private var inboundState = InboundState.active

    private enum InboundState {
        /// Frames are decoded as bytes arrive.
        case active
        /// The input ended while frames were being handled: what is left is decoded after them.
        case leftoversPending
        /// The input ended and what was left has been decoded.
        case done
    }
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
    private var pending: [UInt64: (channel: UInt64?, waiter: Waiter)] = [:]
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
    /// What made the TLS layer fail, for the handshake's future.
    private var tlsFailure: PeerConnectionError?
    private let busyPoll: BusyPoll?
    /// The socket's descriptor, for ``busyPoll``; nil when not polled.
    private var socketDescriptor: Int32?

    /// A client end that says `hello` once connected (after the TLS handshake, with TLS), or a
    /// server end (`hello` nil). `trustStore` is nil on an insecure connection.
    public init(role: Role, eventLoop: any EventLoop, hello: Baton_V1_Hello? = nil, limits: FrameLimits = FrameLimits(),
                timing: Timing = Timing(), trustStore: TrustStore? = nil, delegate: (any PeerConnectionDelegate)? = nil,
                logger: Logger) {
        self.role = role
        self.trustStore = trustStore
        if trustStore == nil { peerIdentity = PeerIdentity(authorization: .sameAccount, deviceID: nil, account: nil) }
        self.eventLoop = eventLoop
        self.hello = hello
        self.ownLimits = limits
        self.frameDecoder = FrameDecoder(limits: limits)
        self.timing = timing
        self.delegate = delegate
        self.logger = logger
        busyPoll = BusyPoll.on(eventLoop, window: timing.busyPoll)
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
        if busyPoll != nil { socketDescriptor = BusyPoll.descriptor(of: context.channel) }
        lastRead = .now()
        switch role {
        case .client:
            // With TLS, Hello waits for the handshake: it carries the revocation list only to
            // an agent of this account.
            if trustStore == nil { sayHello() }
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
        if let socketDescriptor { busyPoll?.forget(socketDescriptor) }
        socketDescriptor = nil
        inputEnded(context: context)
        shutDown(reason: closedReason ?? "the peer closed the connection")
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .some(.inputClosed) { inputEnded(context: context) }
        if case .handshakeCompleted? = event as? TLSUserEvent, role == .client { sayHello() }
        context.fireUserInboundEventTriggered(event)
    }

    private func sayHello() {
        var frame = Baton_V1_Frame()
        frame.hello = hello ?? Baton_V1_Hello.with { $0.protocolVersion = 1 }
        frame.hello.maxFrameSize = UInt32(ownLimits.maxFrameSize)
        if peerIdentity?.authorization == .sameAccount, let list = trustStore?.revocationListText { frame.hello.revocationList = list }
        write(frame)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let wire = error as? WireError, case .protocolError(let reason) = wire {
            if role == .client, !open, trustStore == nil {
                // A TLS agent answers plaintext with a TLS record, which does not parse as a frame.
                tlsFailure = .refusedByPeer("the agent did not answer in plaintext: it speaks TLS (dial it without --insecure)")
                logger.debug("closing connection", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "reason": "\(reason)"])
                closedReason = closedReason ?? reason
                closeContext()
            } else {
                logger.warning("closing connection", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "reason": "\(reason)"])
                goodbye(.protocolError, reason)
            }
        } else if let failure = TLSFailure(error, role: role, refusal: refusal, handshakeOver: open) {
            // The agent logs what it refused; a client's caller gets it as the status's detail.
            logger.log(
                level: role == .server ? .warning : .debug, role == .server ? "refused a caller" : "refused the connection",
                metadata: ["peer": "\(remoteAddress?.description ?? "?")", "reason": "\(failure.logLine)"])
            tlsFailure = failure.error
            closedReason = closedReason ?? failure.error.description
            closeContext()
        } else {
            logger.warning("connection error", metadata: ["peer": "\(remoteAddress?.description ?? "?")", "error": "\(error)"])
            closedReason = closedReason ?? "\(error)"
            closeContext()
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        trafficSeen()
        if let inboundError {
            errorCaught(context: context, error: ByteToMessageDecoderError.dataReceivedInErrorState(inboundError, bytes))
            return
        }
        if var buffered = inbound, buffered.readableBytes > 0 {
            inbound = nil
            buffered.writeImmutableBuffer(bytes)
            inbound = buffered
        } else {
            inbound = bytes
        }
        // Re-entered while handling a frame: the loop below us takes the bytes.
        guard !decodingInbound else { return }
        decodeInbound(context: context, atEnd: false)
        if inboundState == .leftoversPending {
            decodeInbound(context: context, atEnd: true)
            inboundState = .done
        }
    }

    /// The input ended (EOF, or the connection closed): whole frames still buffered are handled,
    /// and a partial one is a protocol error.
    private func inputEnded(context: ChannelHandlerContext) {
        guard inboundState == .active, inboundError == nil else { return }
        if decodingInbound {
            inboundState = .leftoversPending
        } else {
            decodeInbound(context: context, atEnd: true)
            inboundState = .done
        }
    }

    /// Decodes and handles frames until the bytes run out; `atEnd`, with EOF's rules. A
    /// decoding error stops reading for good and goes to ``errorCaught(context:error:)``.
    private func decodeInbound(context: ChannelHandlerContext, atEnd: Bool) {
        decodingInbound = true
        defer { decodingInbound = false }
        // At the end the decoder is asked once even with no bytes (it may be skipping a frame).
        var mayBeEmpty = atEnd
        do throws(WireError) {
            while inboundState == .active || atEnd {
                var buffer: ByteBuffer
                if let taken = inbound, taken.readableBytes > 0 {
                    buffer = taken
                } else if mayBeEmpty {
                    buffer = inbound ?? ByteBuffer()
                } else {
                    return
                }
                mayBeEmpty = false
                // Taken out while decoded from, so the buffer is never copied on write.
                inbound = nil
                let decoded: FrameDecoder.Decoded?
                do throws(WireError) {
                    decoded = try frameDecoder.decodeConvertingMessages(buffer: &buffer, seenEOF: atEnd)
                } catch {
                    keepInbound(&buffer)
                    throw error
                }
                keepInbound(&buffer)
                guard let decoded else { return }
                lastRead = .now()
                handle(decoded)
            }
        } catch {
            inboundError = error
            errorCaught(context: context, error: error)
        }
    }

    /// Puts what is left of `buffer` back in front of any bytes that arrived meanwhile.
    private func keepInbound(_ buffer: inout ByteBuffer) {
        if var arrived = inbound, arrived.readableBytes > 0 {
            inbound = nil
            if buffer.readableBytes > 0 {
                buffer.writeBuffer(&arrived)
            } else {
                buffer = arrived
            }
        }
        if buffer.readableBytes == 0 {
            inbound = nil
            return
        }
        if buffer.readerIndex > 4096 { buffer.discardReadBytes() }
        inbound = buffer
    }

    private func handle(_ decoded: FrameDecoder.Decoded) {
        switch decoded {
        case .event(.oversized(let oversized)):
            answerOversized(oversized)
        case .event(.frame(let frame)):
            receive(frame)
        case .serviceRequest(let request):
            receive(request)
        case .serviceResponse(let response):
            receive(response)
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
                if !ack.revocationList.isEmpty, let problem = adoptRevocationList(ack.revocationList) {
                    // The connection stands: this side's own list still applies.
                    logger.warning("refused the agent's revocation list", metadata: ["reason": "\(problem)"])
                }
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
        case .joinRequest(let request):
            answer(delegate?.connection(self, join: request), frame: { r in Baton_V1_Frame.with { $0.joinResponse = r } }) { _, detail in
                Baton_V1_Frame.with { $0.joinResponse = .with { $0.requestID = request.requestID; $0.status = .unknown; $0.detail = detail } }
            }
        case .joinResponse(let r): complete(r.requestID, frame)
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
            receive(ServiceRequestFrame(wire: request))
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
        case .serviceResponse(let r): receive(ServiceResponseFrame(wire: r))
        }
    }

    /// A ServiceRequest that came with its message already converted: the same rules as
    /// ``receive(_:)-(Baton_V1_Frame)`` applies to one that came as a frame.
    private func receive(_ request: ServiceRequestFrame) {
        guard open else {
            goodbye(.protocolError, role == .server ? "the first frame must be Hello" : "the first frame must be HelloAck")
            return
        }
        if draining {
            writeServiceResponse(
                channelID: request.channelID, requestID: request.requestID, status: .remoteSystemUnavailable,
                message: nil, detail: "the agent is shutting down")
            return
        }
        guard channels.contains(request.channelID) else {
            guard isOpen else { return }
            writeServiceResponse(
                channelID: request.channelID, requestID: request.requestID, status: .appServiceConnectionClosed,
                message: nil, detail: "channel \(request.channelID) is not open")
            return
        }
        guard let delegate else { return }
        answersInFlight += 1
        delegate.connection(self, request: request, responder: ServiceResponder(connection: self, request: request))
    }

    /// A ServiceResponse that came with its message already converted.
    private func receive(_ response: ServiceResponseFrame) {
        guard open else {
            goodbye(.protocolError, role == .server ? "the first frame must be Hello" : "the first frame must be HelloAck")
            return
        }
        guard let entry = pending.removeValue(forKey: response.requestID) else {
            logger.debug("response to no pending request", metadata: ["request": "\(response.requestID)"])
            return
        }
        switch entry.waiter {
        case .service(let completion):
            completion(.success(response))
        case .frame(let promise):
            // Asked for something else: the caller reads the body it expected, which is not there.
            promise.succeed(Baton_V1_Frame.with {
                $0.serviceResponse = .with {
                    $0.channelID = response.channelID
                    $0.requestID = response.requestID
                    $0.status = response.status
                    $0.detail = response.detail
                }
            })
        }
    }

    private static func isRequest(_ body: Baton_V1_Frame.OneOf_Body) -> Bool {
        switch body {
        case .describeRequest, .launchRequest, .openServiceRequest, .serviceRequest, .joinRequest: true
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
        case .joinRequest(let r):
            write(.with { $0.joinResponse = .with { $0.requestID = r.requestID; $0.status = .unknown; $0.detail = detail } })
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
        let sameAccount = peerIdentity?.authorization == .sameAccount
        if sameAccount, !hello.revocationList.isEmpty, let problem = adoptRevocationList(hello.revocationList) {
            logger.warning("refused a caller's revocation list", metadata: [
                "peer": "\(remoteAddress?.description ?? "?")", "reason": "\(problem)",
            ])
            goodbye(.protocolError, "refused the revocation list you sent: \(problem)")
            return
        }
        guard var ack = delegate?.connection(self, hello: hello) else {
            goodbye(.protocolError, "refused")
            return
        }
        if sameAccount, let list = trustStore?.revocationListText { ack.revocationList = list }
        ack.protocolVersion = 1
        ack.maxFrameSize = UInt32(ownLimits.maxFrameSize)
        peerLimits = FrameLimits(announced: hello.maxFrameSize)
        open = true
        write(Baton_V1_Frame.with { $0.helloAck = ack })
    }

    /// Adopts the peer's revocation list when it is newer; why it was refused, if it was.
    private func adoptRevocationList(_ text: String) -> String? {
        guard let trustStore else { return nil }
        do {
            if try trustStore.adopt(revocationListText: text) {
                logger.notice("adopted a newer revocation list", metadata: ["from": "\(remoteAddress?.description ?? "?")"])
                revocationListAdopted?()
            }
            return nil
        } catch {
            return "\(error)"
        }
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

    /// Answers a request the delegate got through a ``ServiceResponder``: the message goes only
    /// with `success`; an answer over the peer's frame limit becomes `message_size_too_large`.
    func answerService(_ request: ServiceRequestFrame, status: ResponseStatus, message: ValueDictionary?, detail: String) {
        answersInFlight -= 1
        defer { if answersInFlight == 0 { drained?() } }
        guard isOpen || draining else { return }
        let problem = writeServiceResponse(
            channelID: request.channelID, requestID: request.requestID, status: Baton_V1_ResponseStatus(status),
            message: status == .success ? message : nil, detail: detail)
        if case .tooLarge(let size, let limit)? = problem {
            logger.warning("answer over the peer's frame limit", metadata: ["size": "\(size)", "limit": "\(limit)"])
            writeServiceResponse(
                channelID: request.channelID, requestID: request.requestID, status: .messageSizeTooLarge, message: nil,
                detail: "the answer is \(size) bytes, over this client's limit of \(limit)")
        }
    }

    /// Answers `success` with a message whose entries `entries` writes straight into the frame;
    /// false, with nothing answered, when `entries` gives up (answer another way then).
    func answerService(_ request: ServiceRequestFrame, entries: (inout ProtoWriter) -> Bool) -> Bool {
        if isOpen || draining {
            var written = true
            let problem = write { out, limit throws(WireError) in
                written = try FrameEncoder.encodeServiceResponse(
                    channelID: request.channelID, requestID: request.requestID, into: &out, maxFrameSize: limit, entries: entries)
            }
            guard written else { return false }
            if case .tooLarge(let size, let limit)? = problem {
                logger.warning("answer over the peer's frame limit", metadata: ["size": "\(size)", "limit": "\(limit)"])
                writeServiceResponse(
                    channelID: request.channelID, requestID: request.requestID, status: .messageSizeTooLarge, message: nil,
                    detail: "the answer is \(size) bytes, over this client's limit of \(limit)")
            }
        }
        answersInFlight -= 1
        if answersInFlight == 0 { drained?() }
        return true
    }

    @discardableResult
    private func writeServiceResponse(
        channelID: UInt64, requestID: UInt64, status: Baton_V1_ResponseStatus, message: ValueDictionary?, detail: String
    ) -> PeerConnectionError? {
        write { out, limit throws(WireError) in
            try FrameEncoder.encodeServiceResponse(
                channelID: channelID, requestID: requestID, status: status, message: message, detail: detail,
                into: &out, maxFrameSize: limit)
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
        switch entry.waiter {
        case .frame(let promise):
            promise.succeed(frame)
        case .service(let completion):
            // Asked for a service answer and got another kind: the body it expected is not there.
            completion(.success(ServiceResponseFrame(wire: Baton_V1_ServiceResponse())))
        }
    }

    // MARK: sending

    @discardableResult
    private func write(_ frame: Baton_V1_Frame) -> PeerConnectionError? {
        write { out, limit throws(WireError) in try FrameEncoder.encode(frame, into: &out, maxFrameSize: limit) }
    }

    /// Appends what `encode` writes (one frame, refused over the peer's limit) to the outbox.
    @discardableResult
    private func write(_ encode: (inout ByteBuffer, _ limit: Int) throws(WireError) -> Void) -> PeerConnectionError? {
        guard let context, closedReason == nil else { return .closed(closedReason ?? "not connected") }
        // Taken out while written to, so the buffer is never copied on write.
        var buffer = outbox ?? context.channel.allocator.buffer(capacity: 256)
        outbox = nil
        do throws(WireError) {
            try encode(&buffer, peerLimits.maxFrameSize)
        } catch {
            outbox = buffer
            if case .frameTooLarge(let size, let limit) = error { return .tooLarge(size: size, limit: limit) }
            return .closed("\(error)")
        }
        outbox = buffer
        if buffer.readableBytes >= Self.flushThreshold {
            // A long batch: the peer starts on these answers while this end makes the rest.
            sendOutbox()
        } else if !flushScheduled {
            flushScheduled = true
            eventLoop.execute { [self] in flushOutbox() }
        }
        return nil
    }

    /// Frames waiting in the outbox past this many bytes are flushed before the batch ends.
    /// Measured with 64 requests in flight: flushing only at the end of each batch makes the
    /// two ends take turns (~150k msg/s); 4 KiB lets them overlap (~300k msg/s).
    static let flushThreshold = 4096

    /// Closes the socket after what is already written.
    private func closeContext() {
        sendOutbox()
        context?.close(promise: nil)
    }

    /// Hands every frame written since the last flush to the socket in one write: answers to a
    /// batch of pipelined requests cost one system call, not one each.
    private func flushOutbox() {
        flushScheduled = false
        sendOutbox()
    }

    private func sendOutbox() {
        guard let context, let buffer = outbox, buffer.readableBytes > 0 else { return }
        outbox = nil
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        trafficSeen()
    }

    /// Bytes went in or out: an answer, or the next request, is likely to follow soon.
    private func trafficSeen() {
        if let busyPoll, let socketDescriptor { busyPoll.activity(on: socketDescriptor) }
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
            pending[id] = (channel, .frame(promise))
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

    /// Asks the agent to enrol this device with an invite code; `request.requestID` is set here.
    public func join(_ request: Baton_V1_JoinRequest) -> EventLoopFuture<Baton_V1_JoinResponse> {
        self.request { id in .with { var r = request; r.requestID = id; $0.joinRequest = r } }.map { $0.joinResponse }
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

    /// Sends a request on an open channel (either end may). `completion` runs once, on the
    /// loop: with the peer's response, or with why there is none (``PeerConnectionError``).
    /// Call on the loop.
    public func send(
        channel: UInt64, message: ValueDictionary,
        completion: @escaping (Result<ServiceResponseFrame, PeerConnectionError>) -> Void
    ) {
        guard channels.contains(channel) else { return completion(.failure(.noSuchChannel(channel))) }
        eventLoop.preconditionInEventLoop()
        guard isOpen else { return completion(.failure(.closed(closedReason ?? "not connected"))) }
        let id = nextRequestID
        nextRequestID += 1
        let problem = write { out, limit throws(WireError) in
            try FrameEncoder.encodeServiceRequest(channelID: channel, requestID: id, message: message, into: &out, maxFrameSize: limit)
        }
        if let problem {
            completion(.failure(problem))
        } else {
            pending[id] = (channel, .service(completion))
        }
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
        let detail = "the channel closed before the answer came"
        for (id, entry) in pending where entry.channel == channel {
            pending[id] = nil
            switch entry.waiter {
            case .service(let completion):
                completion(.success(ServiceResponseFrame(
                    channelID: channel, requestID: id, status: .appServiceConnectionClosed, detail: detail)))
            case .frame(let promise):
                promise.succeed(.with {
                    $0.serviceResponse = .with {
                        $0.channelID = channel
                        $0.requestID = id
                        $0.status = .appServiceConnectionClosed
                        $0.detail = detail
                    }
                })
            }
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
        handshake?.fail(tlsFailure ?? PeerConnectionError.closed(reason))
        handshake = nil
        let requests = pending
        pending = [:]
        for (_, entry) in requests {
            switch entry.waiter {
            case .frame(let promise): promise.fail(PeerConnectionError.closed(reason))
            case .service(let completion): completion(.failure(.closed(reason)))
            }
        }
        let status: Baton_V1_ClosedStatus = goodbyeReason == .shutdown ? .canceled : .unknown
        let open = channels
        channels = []
        for channel in open.sorted() { delegate?.connection(self, channelClosed: channel, status: status) }
        delegate?.connectionClosed(self, reason: reason)
        delegate = nil
    }
}

/// What waits for a response: a promise for the frame, or a service request's callback.
private enum Waiter {
    case frame(EventLoopPromise<Baton_V1_Frame>)
    case service((Result<ServiceResponseFrame, PeerConnectionError>) -> Void)
}

/// Answers one service request, once, on the connection's loop. The delegate gets one with
/// each request and must use it exactly once: every request gets exactly one response.
public struct ServiceResponder: Sendable {
    let connection: PeerConnection
    let request: ServiceRequestFrame

    /// Sends the answer: `message` goes with `success` only; an answer over the peer's frame
    /// limit is sent as `message_size_too_large` instead.
    public func respond(_ status: ResponseStatus, message: ValueDictionary? = nil, detail: String = "") {
        connection.answerService(request, status: status, message: message, detail: detail)
    }

    /// Answers `success` with a message whose entries `entries` writes straight into the frame
    /// (see `ProtoWriter.entry(key:value:)`), as ``respond(_:message:detail:)`` would with the
    /// same message as Values. Returns false, answering nothing, when `entries` gives up: the
    /// request still waits for its one answer.
    package func respond(entries: (inout ProtoWriter) -> Bool) -> Bool {
        connection.answerService(request, entries: entries)
    }
}

extension TimeAmount {
    /// Whole seconds, for messages.
    var seconds: Int64 { nanoseconds / 1_000_000_000 }
}
