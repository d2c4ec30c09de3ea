import BatonCore
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// One end of a Baton connection: the conversation (``SessionStateMachine``), this end's
/// requests and the channels open on it (``RequestMultiplexer``), over a ``Link`` that carries
/// the frames and says who the peer is. This type only drives them: it turns what the state
/// machine decides into writes, calls to the delegate and channel handlers, completed futures
/// and timers. Confined to its link's event loop; every public method must be called there.
public final class PeerConnection: LinkSession, @unchecked Sendable {
    /// Which end this is.
    public enum Role: Sendable { case client, server }

    /// Timings; the defaults are the protocol's.
    public struct Timing: Sendable {
        /// An agent drops a client that has not said Hello by then.
        public var helloTimeout: TimeAmount = .seconds(10)
        /// Silence after which this end sends a Ping.
        public var pingAfter: TimeAmount = .seconds(15)
        /// Silence after which the peer is taken for dead (Goodbye `timeout`).
        public var deadAfter: TimeAmount = .seconds(45)
        /// How long the event loop keeps polling the socket after traffic instead of sleeping,
        /// so that an answer or the next request is read without waiting for a CPU to wake
        /// (see ``BusyPoll``). Zero lets the loop sleep at once. Costs at most this much CPU
        /// time after each burst of traffic; Linux's own `busy_poll` suggests 50 µs.
        public var busyPoll: TimeAmount = .microseconds(50)
        public init() {}

        var session: SessionStateMachine.Timing {
            var timing = SessionStateMachine.Timing()
            timing.helloTimeout = helloTimeout
            timing.pingAfter = pingAfter
            timing.deadAfter = deadAfter
            return timing
        }
    }

    public let role: Role
    public let eventLoop: any EventLoop
    public let logger: Logger
    /// What the other end asks of this one outside channels.
    public var delegate: (any PeerConnectionDelegate)?
    /// The client's Hello (on a server), once received.
    public private(set) var peerHello: Hello?
    /// The agent's HelloAck (on a client), once received.
    public private(set) var peerHelloAck: HelloAck?
    /// Who the peer proved to be, once the link established it: `same_account` or `anonymous`,
    /// its device id and account. On a plaintext link, `same_account` with no id.
    public private(set) var peerIdentity: PeerIdentity?
    /// Judges the peer and keeps the revocation list Hello carries; nil on a plaintext link.
    let trustStore: TrustStore?
    /// Called after this connection adopted a newer revocation list from its peer.
    var revocationListAdopted: (() -> Void)?

    private var session: SessionStateMachine
    private var multiplexer = RequestMultiplexer()
    private let link: any Link
    private let hello: Hello?
    private var handshake: EventLoopPromise<Void>?
    /// Why the connection could not come up, for the handshake's future.
    private var failure: PeerConnectionError?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var drained: (() -> Void)?
    private let closed: EventLoopPromise<Void>

    /// A connection over `link`, which must not have started yet (make the connection its
    /// session): a client that says `hello` once the link is established, or a server (`hello`
    /// nil). `trustStore` is nil on a plaintext link.
    package init(
        role: Role, link: any Link, hello: Hello? = nil, limits: FrameLimits = FrameLimits(), timing: Timing = Timing(),
        trustStore: TrustStore? = nil, delegate: (any PeerConnectionDelegate)? = nil, logger: Logger
    ) {
        self.role = role
        self.link = link
        self.eventLoop = link.eventLoop
        self.hello = hello
        self.trustStore = trustStore
        self.delegate = delegate
        self.logger = logger
        session = SessionStateMachine(role: role == .client ? .client : .server, limits: limits, timing: timing.session, now: .now())
        closed = eventLoop.makePromise()
        if role == .client { handshake = eventLoop.makePromise() }
    }

    /// Completes when the handshake is done (client end), or fails if the connection ends first.
    public var handshakeDone: EventLoopFuture<Void> {
        handshake?.futureResult ?? eventLoop.makeSucceededVoidFuture()
    }

    /// Completes when the connection is gone.
    public var closeFuture: EventLoopFuture<Void> { closed.futureResult }

    /// Whether the connection is open and past its handshake.
    public var isOpen: Bool { session.isOpen }

    /// Where the peer is, for logs.
    public var remoteDescription: String { link.peerDescription }

    // MARK: what the link says

    public func linkEstablished(_ link: any Link, peer: PeerIdentity) {
        peerIdentity = peer
        var hello = self.hello
        // Hello carries the revocation list only to an agent of this account.
        if role == .client, peer.authorization == .sameAccount, let list = trustStore?.revocationListText {
            hello?.revocationList = list
        }
        if let frame = session.linkEstablished(hello: hello ?? (role == .client ? Hello() : nil), now: .now()) { write(frame) }
        armTimer()
    }

    public func link(_ link: any Link, received event: FrameEvent) {
        if case .oversized(let oversized) = event {
            logger.warning("frame over the size limit", metadata: ["peer": "\(remoteDescription)", "frame": "\(oversized)"])
        }
        perform(session.receive(event, now: .now()))
    }

    public func link(_ link: any Link, failed linkFailure: LinkFailure) {
        switch linkFailure {
        case .protocolError(let reason):
            if role == .client, !session.isOpen, trustStore == nil {
                // A TLS agent answers plaintext with a TLS record, which does not parse as a frame.
                failure = .refusedByPeer("the agent did not answer in plaintext: it speaks TLS (dial it without --insecure)")
                logger.debug("closing connection", metadata: ["peer": "\(remoteDescription)", "reason": "\(reason)"])
                _ = session.linkClosed(reason)
            } else {
                logger.warning("closing connection", metadata: ["peer": "\(remoteDescription)", "reason": "\(reason)"])
                perform(session.goodbye(.protocolError, reason))
            }
        case .refused(let error, let logLine):
            // The agent logs what it refused; a client's caller gets it as the status's detail.
            logger.log(
                level: role == .server ? .warning : .debug, role == .server ? "refused a caller" : "refused the connection",
                metadata: ["peer": "\(remoteDescription)", "reason": "\(logLine)"])
            failure = error
            _ = session.linkClosed(error.description)
        case .failed(let error):
            logger.warning("connection error", metadata: ["peer": "\(remoteDescription)", "error": "\(error)"])
            _ = session.linkClosed(error)
        }
    }

    public func linkClosed(_ link: any Link) {
        timer?.cancel()
        timer = nil
        let reason = session.linkClosed("the peer closed the connection")
        handshake?.fail(failure ?? .closed(reason))
        handshake = nil
        let (completions, channels) = multiplexer.fail(.closed(reason))
        for completion in completions { completion.run() }
        let status = session.closedChannelStatus
        for channel in channels { channel.handler.channelClosed(channel.id, status: status) }
        delegate?.connectionClosed(self, reason: reason)
        delegate = nil
        drained?()
        closed.succeed()
    }

    /// The connection never came up (refused, timed out): fail the handshake.
    func abandon(_ error: any Error) {
        handshake?.fail(error)
        handshake = nil
        _ = session.linkClosed("\(error)")
    }

    // MARK: doing what the session says

    private func perform(_ received: SessionStateMachine.Received) {
        switch received {
        case .nothing:
            break
        case .write(let frame):
            write(frame)
        case .hello(let hello):
            answerHello(hello)
        case .handshakeDone(let ack):
            peerHelloAck = ack
            // A newer list is kept before the connection is used (or the process ends).
            let open = { [self] in
                handshake?.succeed()
                handshake = nil
            }
            adoptRevocationList(ack.revocationList, refused: { [self] problem in
                // The connection stands: this side's own list still applies.
                logger.warning("refused the agent's revocation list", metadata: ["reason": "\(problem)"])
                open()
            }, then: open)
        case .request(let frame):
            serve(frame)
        case .response(let frame):
            if let completion = multiplexer.complete(frame) {
                completion.run()
            } else {
                logger.debug("response to no pending request", metadata: ["request": "\(frame.requestID ?? 0)"])
            }
        case .channelClosed(let id, let status):
            guard let (handler, completions) = multiplexer.close(id) else { return }
            for completion in completions { completion.run() }
            handler.channelClosed(id, status: status)
        case .close(let goodbye, _):
            if let goodbye { write(goodbye) }
            link.close()
        }
    }

    private func answerHello(_ hello: Hello) {
        peerHello = hello
        let sameAccount = peerIdentity?.authorization == .sameAccount
        // A newer list is kept first, so that the HelloAck carries it, and refuses at once
        // whoever it revokes.
        adoptRevocationList(sameAccount ? hello.revocationList : "", refused: { [self] problem in
            logger.warning("refused a caller's revocation list", metadata: ["peer": "\(remoteDescription)", "reason": "\(problem)"])
            perform(session.goodbye(.protocolError, "refused the revocation list you sent: \(problem)"))
        }) { [self] in
            acknowledge(hello, sameAccount: sameAccount)
        }
    }

    private func acknowledge(_ hello: Hello, sameAccount: Bool) {
        guard let device = delegate?.connection(self, hello: hello) else {
            perform(session.goodbye(.protocolError, "refused"))
            return
        }
        var ack = HelloAck(device: device)
        if sameAccount, let list = trustStore?.revocationListText { ack.revocationList = list }
        if let frame = session.accept(hello, answer: ack) { write(frame) }
    }

    /// Takes the peer's revocation list `text` (empty: none) when it is newer: checked here,
    /// written to the folder on a thread that may block, then `then`. A list that does not
    /// check out goes to `refused` instead.
    private func adoptRevocationList(_ text: String, refused: (String) -> Void, then: @escaping () -> Void) {
        guard let trustStore, !text.isEmpty else { return then() }
        do {
            guard try trustStore.isNewer(revocationListText: text) else { return then() }
        } catch {
            return refused("\(error)")
        }
        let peer = remoteDescription
        let then = NIOLoopBound(then, eventLoop: eventLoop)
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            try trustStore.adopt(revocationListText: text)
        }.whenComplete { [self] result in
            switch result {
            case .success(true):
                logger.notice("adopted a newer revocation list", metadata: ["from": "\(peer)"])
                revocationListAdopted?()
            case .success(false):
                break
            case .failure(let error):
                logger.warning("cannot keep a newer revocation list", metadata: ["from": "\(peer)", "error": "\(error)"])
            }
            guard session.phase != .closed else { return }
            then.value()
        }
    }

    // MARK: serving the peer's requests

    private func serve(_ frame: Frame) {
        let delegate = self.delegate ?? RefusingDelegate.shared
        switch frame {
        case .describeRequest(let id):
            answer(delegate.connectionDescribe(self), to: frame) { .describeResponse(requestID: id, .success($0)) }
        case .launchRequest(let id, .failure(let error)):
            answer(.launchResponse(requestID: id, status: .unknown, detail: "bad launch data: \(error)"))
        case .launchRequest(let id, .success(let request)):
            answer(delegate.connection(self, launch: request), to: frame) { .launchResponse(requestID: id, status: $0.0, detail: $0.1) }
        case .openServiceRequest(let id, let channel, let service, let app):
            guard !multiplexer.isOpen(channel) else {
                return answer(refusal(frame, .channelAlreadyOpen))
            }
            answer(delegate.connection(self, open: service, app: app, channelID: channel), to: frame) { [self] answer in
                if answer.status == .success, let handler = answer.handler, isOpen { multiplexer.open(channel, handler: handler) }
                return .openServiceResponse(requestID: id, status: answer.status, detail: answer.detail)
            }
        case .serviceRequest(let channel, let id, let message):
            guard let handler = multiplexer.handler(of: channel) else {
                return answer(refusal(frame, .channelNotOpen))
            }
            handler.channel(channel, of: self, request: message, responder: ServiceResponder(connection: self, channelID: channel, requestID: id))
        case .joinRequest(let id, let request):
            answer(delegate.connection(self, join: request), to: frame) { .joinResponse(requestID: id, $0) }
        default:
            preconditionFailure("\(frame) is not a request")
        }
    }

    private func refusal(_ request: Frame, _ why: Refusal) -> Frame {
        SessionStateMachine.refusal(RequestHead(request)!, why)!
    }

    /// Answers `request` with what `future` gives, made into a frame by `make`; a failed future
    /// gets the refusal of its kind.
    private func answer<T: Sendable>(_ future: EventLoopFuture<T>, to request: Frame, _ make: @escaping (T) -> Frame) {
        let make = NIOLoopBound(make, eventLoop: eventLoop)
        future.hop(to: eventLoop).whenComplete { [self] result in
            switch result {
            case .success(let value): answer(make.value(value))
            case .failure(let error): answer(refusal(request, .failed("\(error)")))
            }
        }
    }

    /// Sends the answer to one of the peer's requests (if the connection is still there); one
    /// over the peer's frame limit goes as the too-large answer of its kind.
    func answer(_ frame: Frame) {
        if session.answered() {
            if case .tooLarge(let size, let limit)? = write(frame), let fallback = SessionStateMachine.fallback(for: frame, size: size, limit: limit) {
                logger.warning("answer over the peer's frame limit", metadata: ["size": "\(size)", "limit": "\(limit)"])
                write(fallback)
            }
        }
        if session.isDrained { drained?() }
    }

    /// Answers a ServiceRequest `success` with the message `source` writes; false, answering
    /// nothing, when `source` gives up.
    func answer(channelID: UInt64, requestID: UInt64, source: some MessageSource) -> Bool {
        guard session.isOpen || session.phase == .draining else {
            // Nobody to tell any more.
            _ = session.answered()
            return true
        }
        var gaveUp = false
        let problem = link.write(limit: session.peerLimits.maxFrameSize) { out, limit throws(WireError) in
            gaveUp = try !FrameEncoder.encodeServiceResponse(
                channelID: channelID, requestID: requestID, source: source, into: &out, maxFrameSize: limit)
        }
        guard !gaveUp else { return false }
        if case .frameTooLarge(let size, let limit)? = problem {
            // Counted once, by the answer that takes its place.
            answer(SessionStateMachine.fallback(
                for: .serviceResponse(channelID: channelID, requestID: requestID, reply: ServiceReply(status: .success)),
                size: size, limit: limit)!)
            return true
        }
        _ = session.answered()
        if session.isDrained { drained?() }
        return true
    }

    // MARK: sending

    /// Writes `frame` to the link; the peer's frame limit applies.
    @discardableResult
    private func write(_ frame: Frame) -> PeerConnectionError? {
        let problem = link.write(limit: session.peerLimits.maxFrameSize) { out, limit throws(WireError) in
            try FrameEncoder.encode(frame, into: &out, maxFrameSize: limit)
        }
        switch problem {
        case nil: return nil
        case .frameTooLarge(let size, let limit)?: return .tooLarge(size: size, limit: limit)
        case let error?: return .closed("\(error)")
        }
    }

    /// Sends the request `make` builds with a fresh id; `completion` gets the answer, or why
    /// there is none.
    private func request(channel: UInt64? = nil, _ make: (UInt64) -> Frame, _ completion: @escaping RequestMultiplexer.Waiter) {
        eventLoop.preconditionInEventLoop()
        guard isOpen else { return completion(.failure(.closed(session.closedReason ?? "not connected"))) }
        let id = multiplexer.makeRequestID()
        if let problem = write(make(id)) { return completion(.failure(problem)) }
        multiplexer.await(id, channel: channel, completion)
    }

    /// As ``request(channel:_:_:)``, answered by the frame `extract` finds in the answer.
    private func request<T: Sendable>(_ make: (UInt64) -> Frame, _ extract: @escaping (Frame) -> T?) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        request(make) { result in
            switch result {
            case .success(let frame):
                guard let value = extract(frame) else {
                    return promise.fail(PeerConnectionError.closed("the peer answered with \(frame)"))
                }
                promise.succeed(value)
            case .failure(let error):
                promise.fail(error)
            }
        }
        return promise.futureResult
    }

    /// Asks for the device and its apps; fails when the agent would not say.
    public func describe() -> EventLoopFuture<DeviceDescription> {
        request({ .describeRequest(requestID: $0) }) { frame -> Result<DeviceDescription, PeerConnectionError>? in
            guard case .describeResponse(_, let result) = frame else { return nil }
            switch result {
            case .success(let description?): return .success(description)
            case .success(nil): return .failure(.refusedByPeer("the agent did not describe itself (is it shutting down?)"))
            case .failure(let error): return .failure(.refusedByPeer("the agent's description is not valid: \(error)"))
            }
        }.flatMapResult { $0 }
    }

    /// Asks the peer to launch `request`: the status and, if not `success`, why.
    public func launch(_ request: LaunchRequest) -> EventLoopFuture<(LaunchStatus, String)> {
        self.request({ .launchRequest(requestID: $0, .success(request)) }) { frame in
            guard case .launchResponse(_, let status, let detail) = frame else { return nil }
            return (status, detail)
        }
    }

    /// Asks the agent to enrol this device with an invite code.
    public func join(_ request: JoinRequest) -> EventLoopFuture<JoinAnswer> {
        self.request({ .joinRequest(requestID: $0, request) }) { frame in
            guard case .joinResponse(_, let answer) = frame else { return nil }
            return answer
        }
    }

    /// Opens a channel to `service` of `app`, served on this end by `handler` (the peer's
    /// requests on it, and its closing): on `success`, the channel's id.
    public func open(service: String, app: String, handler: any ServiceChannelHandler) -> EventLoopFuture<(channelID: UInt64?, status: OpenStatus, detail: String)> {
        let channel = multiplexer.makeChannelID()
        return request({ .openServiceRequest(requestID: $0, channelID: channel, service: service, app: app) }) { [self] frame in
            guard case .openServiceResponse(_, let status, let detail) = frame else { return nil }
            guard status == .success, isOpen else { return (nil, status, detail) }
            multiplexer.open(channel, handler: handler)
            return (channel, status, detail)
        }
    }

    /// Sends a request on an open channel (either end may); `completion` runs once, on the
    /// loop, with the peer's reply or the status that takes its place: `remote_system_unavailable`
    /// when the connection is lost, `message_size_too_large` over the peer's limit,
    /// `app_service_connection_closed` when the channel is not open or closes first.
    public func send(channel: UInt64, message: ServiceMessage, completion: @escaping (ServiceReply) -> Void) {
        guard multiplexer.isOpen(channel) else {
            return completion(ServiceReply(status: .appServiceConnectionClosed, detail: "channel \(channel) is not open"))
        }
        request(channel: channel, { .serviceRequest(channelID: channel, requestID: $0, message: message) }) { result in
            switch result {
            case .success(.serviceResponse(_, _, let reply)):
                completion(reply)
            case .success(let frame):
                completion(ServiceReply(status: .unknown, detail: "the peer answered with \(frame)"))
            case .failure(.tooLarge(let size, let limit)):
                completion(ServiceReply(status: .messageSizeTooLarge, detail: "the message is \(size) bytes, over the agent's limit of \(limit)"))
            case .failure(let error):
                completion(ServiceReply(status: .remoteSystemUnavailable, detail: "\(error)"))
            }
        }
    }

    /// Closes a channel from this end: the peer hears `status`; requests this end still waits
    /// for on it get `app_service_connection_closed`. Its handler is not told (this end knows).
    public func close(channel: UInt64, status: ClosedStatus = .completed) {
        guard let (_, completions) = multiplexer.close(channel) else { return }
        if isOpen || session.phase == .draining { write(.closeService(channelID: channel, status: status)) }
        for completion in completions { completion.run() }
    }

    /// Whether channel `id` is open.
    public func isChannelOpen(_ id: UInt64) -> Bool { multiplexer.isOpen(id) }

    // MARK: ending

    /// Says goodbye with `reason` and closes.
    public func goodbye(_ reason: GoodbyeReason, _ detail: String) {
        perform(session.goodbye(reason, detail))
    }

    /// Shuts down gracefully: requests from the peer are no longer taken, the ones in flight
    /// get their answers (for up to `grace`), then Goodbye `reason` and close. The future
    /// completes when the connection is closed.
    public func drainAndClose(_ reason: GoodbyeReason, _ detail: String, grace: TimeAmount = .seconds(5)) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        guard session.phase != .closed else { return closeFuture }
        session.drain()
        let finish = { [self] in
            drained = nil
            goodbye(reason, detail)
        }
        if session.isDrained {
            finish()
        } else {
            drained = finish
            eventLoop.scheduleTask(in: grace) { [self] in drained?() }
        }
        return closeFuture
    }

    // MARK: time

    /// Keeps one timer at the state machine's next deadline.
    private func armTimer() {
        guard let deadline = session.nextDeadline else { return }
        if let timerDeadline, timerDeadline <= deadline, timer != nil { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = eventLoop.scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = nil
            perform(session.tick(now: .now()))
            armTimer()
        }
    }
}

/// Answers for a connection that has no delegate: the protocol's polite refusals.
private final class RefusingDelegate: PeerConnectionDelegate {
    static let shared = RefusingDelegate()
}
