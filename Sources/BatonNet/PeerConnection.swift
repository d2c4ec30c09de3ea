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
        /// How long a request waits for its answer when its caller gives no deadline; and how
        /// long a request of the peer may be served when the peer gives none.
        public var requestTimeout: TimeAmount = .seconds(30)
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

    /// How much the peer may ask of this end at once (`Protocol/baton.proto`, LIMITS).
    public struct ServingLimits: Sendable {
        /// Requests of the peer served at once; past them this end stops reading from the
        /// peer until half are answered (the peer's requests wait, nothing is lost).
        public var requestsInFlight = 256
        /// Channels the peer may have open; an OpenServiceRequest past them is refused.
        public var channels = 1024
        /// The same for a peer of another account, or none: a stranger gets less.
        public var anonymousRequestsInFlight = 32
        public var anonymousChannels = 16
        public init() {}
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
    /// The server's log of callers refused and connections lost; nil on a client.
    var refusalLog: RefusalLog?
    /// On a server: whether to let in a peer who proved to be this, or why not (a Goodbye
    /// `busy` says so).
    var admission: ((PeerIdentity) -> String?)?

    /// The timings it was made with.
    public let timing: Timing
    var session: SessionStateMachine
    var multiplexer = RequestMultiplexer()
    let link: any Link
    private let hello: Hello?
    private var handshake: EventLoopPromise<Void>?
    /// Why the connection could not come up, for the handshake's future.
    private var failure: PeerConnectionError?
    /// The keepalive's timer, at the state machine's next deadline.
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    /// Requests' deadlines: one timer at the earliest, of either end's requests.
    private var deadlineTimer: Scheduled<Void>?
    private var deadlineTimerAt: NIODeadline?
    /// Requests of the peer being served, by id.
    var inFlight: [UInt64: RequestContext] = [:]
    /// Contexts of answered requests, to serve later ones once nothing else holds them.
    var spareContexts: [RequestContext] = []
    /// What the peer may ask at once.
    public let serving: ServingLimits
    /// Whether the link was asked to stop reading: ``inFlight`` reached its limit.
    var receivingPaused = false
    /// When the frame being handled was read.
    var receivedAt: NIODeadline
    var drained: (() -> Void)?
    private let closed: EventLoopPromise<Void>

    /// A connection over `link`, which must not have started yet (make the connection its
    /// session): a client that says `hello` once the link is established, or a server (`hello`
    /// nil). `trustStore` is nil on a plaintext link.
    package init(
        role: Role, link: any Link, hello: Hello? = nil, limits: FrameLimits = FrameLimits(), timing: Timing = Timing(),
        serving: ServingLimits = ServingLimits(), trustStore: TrustStore? = nil, delegate: (any PeerConnectionDelegate)? = nil,
        logger: Logger
    ) {
        self.role = role
        self.serving = serving
        self.link = link
        self.eventLoop = link.eventLoop
        self.hello = hello
        self.trustStore = trustStore
        self.delegate = delegate
        self.logger = logger
        self.timing = timing
        receivedAt = eventLoop.now
        session = SessionStateMachine(role: role == .client ? .client : .server, limits: limits, timing: timing.session, now: receivedAt)
        closed = eventLoop.makePromise()
        if role == .client { handshake = eventLoop.makePromise() }
        // A caller has until the hello timeout to finish its TLS handshake and say Hello.
        if role == .server { armTimer() }
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
        eventLoop.assertInEventLoop()
        peerIdentity = peer
        if role == .server, let refusal = admission?(peer) {
            _ = session.linkEstablished(hello: nil, now: eventLoop.now)
            trouble(.busy, "refused a caller", refusal)
            perform(session.goodbye(.busy, refusal))
            return
        }
        var hello = self.hello
        // Hello carries the revocation list only to an agent of this account.
        if role == .client, peer.authorization == .sameAccount, let list = trustStore?.revocationListText {
            hello?.revocationList = list
        }
        if let frame = session.linkEstablished(hello: hello ?? (role == .client ? Hello() : nil), now: eventLoop.now) { write(frame) }
        armTimer()
    }

    public func link(_ link: any Link, received event: FrameEvent) {
        eventLoop.assertInEventLoop()
        if case .oversized(let oversized) = event {
            logger.warning("frame over the size limit", metadata: ["peer": "\(remoteDescription)", "frame": "\(oversized)"])
        }
        receivedAt = eventLoop.now
        perform(session.receive(event, now: receivedAt))
    }

    public func link(_ link: any Link, failed linkFailure: LinkFailure) {
        eventLoop.assertInEventLoop()
        switch linkFailure {
        case .protocolError(let reason):
            if role == .client, !session.isOpen, trustStore == nil {
                // A TLS agent answers plaintext with a TLS record, which does not parse as a frame.
                failure = .refusedByPeer("the agent did not answer in plaintext: it speaks TLS (dial it without --insecure)")
                logger.debug("closing connection", metadata: ["peer": "\(remoteDescription)", "reason": "\(reason)"])
                _ = session.linkClosed(reason)
            } else {
                trouble(.broken, "closing connection", reason)
                perform(session.goodbye(.protocolError, reason))
            }
        case .refused(let error, let logLine):
            // The agent logs what it refused; a client's caller gets it as the status's detail.
            if role == .server {
                trouble(.refused, "refused a caller", logLine)
            } else {
                logger.debug("refused the connection", metadata: ["peer": "\(remoteDescription)", "reason": "\(logLine)"])
            }
            failure = error
            _ = session.linkClosed(error.description)
        case .failed(let error):
            trouble(.reset, "connection error", error)
            _ = session.linkClosed(error)
        }
    }

    /// A connection's trouble, for the log: through the server's ``RefusalLog`` (a line for
    /// the first of a spell, a summary for the rest), else a line of its own.
    func trouble(_ kind: RefusalLog.Kind, _ message: Logger.Message, _ detail: String) {
        if let refusalLog {
            refusalLog.note(kind, message, peer: remoteDescription, detail: detail)
        } else {
            logger.warning(message, metadata: ["peer": "\(remoteDescription)", "reason": "\(detail)"])
        }
    }

    public func linkClosed(_ link: any Link) {
        eventLoop.assertInEventLoop()
        timer?.cancel()
        timer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        cancelServing()
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
        _ = session.linkClosed(ErrorWords.of(error))
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
            if let completion = multiplexer.complete(frame, at: receivedAt) {
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

    // MARK: ending

    /// Says goodbye with `reason` and closes.
    public func goodbye(_ reason: GoodbyeReason, _ detail: String) {
        eventLoop.preconditionInEventLoop()
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

    /// Keeps one timer at the earliest deadline of a request of either end: `deadline` is a new
    /// one. When it fires, requests past theirs are given up, and it is set again.
    func armDeadlines(_ deadline: NIODeadline) {
        if let deadlineTimerAt, deadlineTimerAt <= deadline, deadlineTimer != nil { return }
        deadlineTimer?.cancel()
        deadlineTimerAt = deadline
        deadlineTimer = eventLoop.scheduleTask(deadline: deadline) { [self] in
            deadlineTimer = nil
            deadlineTimerAt = nil
            let now = eventLoop.now
            for completion in multiplexer.expire(at: now) { completion.run() }
            expireServing(at: now)
            let next = [multiplexer.earliestDeadline, inFlight.values.lazy.map(\.deadline).min()].compactMap { $0 }.min()
            if let next { armDeadlines(next) }
        }
    }

    /// Keeps one timer at the state machine's next deadline.
    private func armTimer() {
        guard let deadline = session.nextDeadline else { return }
        if let timerDeadline, timerDeadline <= deadline, timer != nil { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = eventLoop.scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = nil
            let before = session.phase
            let ticked = session.tick(now: eventLoop.now)
            if role == .server, case .close(_, let reason) = ticked, before == .connecting || before == .handshaking {
                trouble(.timedOut, "closing connection", reason)
            }
            perform(ticked)
            armTimer()
        }
    }
}
