import BatonCore
import BatonWire
import NIOCore

/// The rules of one Baton conversation (Protocol/baton.proto, CONVERSATION) as a state
/// machine over plain values: frames and timer ticks go in, frames to write and what the
/// owner must do come out. It holds no socket, no event loop and no callback: ``PeerConnection``
/// drives it over a ``Link``, and tests drive it with values.
///
/// It knows the handshake (Hello first, then HelloAck, one version), who may send what when,
/// keepalive (a Ping after silence, Goodbye `timeout` for a peer silent too long), draining
/// (no new requests while the answers in flight go out), the frame limits each side
/// announced, and the one status each kind of request gets when it cannot be served.
package struct SessionStateMachine: Sendable {
    /// Which end this is.
    package enum Role: Sendable { case client, server }

    /// Timings; the defaults are the protocol's.
    package struct Timing: Sendable {
        /// An agent drops a client that has not said Hello by then.
        package var helloTimeout: TimeAmount = .seconds(10)
        /// Silence after which this end sends a Ping.
        package var pingAfter: TimeAmount = .seconds(15)
        /// Silence after which the peer is taken for dead.
        package var deadAfter: TimeAmount = .seconds(45)
        package init() {}
    }

    /// Where the conversation is.
    package enum Phase: Sendable, Equatable {
        /// The link is not up yet.
        case connecting
        /// Client: Hello sent, waiting for HelloAck. Server: waiting for Hello.
        case handshaking
        case open
        /// Shutting down: requests are refused, answers in flight still go out.
        case draining
        case closed
    }

    /// What to do with a frame that arrived.
    /// The handshake's and the closing's are boxed: the frames that come many a second move in
    /// a smaller value.
    package enum Received: Sendable, Equatable {
        case nothing
        /// Send this (a Pong, or the status a request gets when it cannot be served).
        case write(Frame)
        /// Server: the client said Hello. Answer with ``accept(_:answer:)`` or ``goodbye(_:_:)``.
        indirect case hello(Hello)
        /// Client: the agent's HelloAck; the connection is open.
        indirect case handshakeDone(HelloAck)
        /// The peer asks: it must get exactly one answer, through ``answered()``.
        case request(Frame)
        /// The answer to one of this end's requests.
        case response(Frame)
        /// The peer closed a channel.
        case channelClosed(UInt64, ClosedStatus)
        /// Close the connection, after writing `goodbye` when there is one; `reason` is for
        /// logs and for everything still pending.
        indirect case close(goodbye: Frame?, reason: String)
    }

    package let role: Role
    package let timing: Timing
    /// The limits this end announced.
    package let ownLimits: FrameLimits
    /// The limits the peer announced (the default until it did).
    package private(set) var peerLimits = FrameLimits()
    package private(set) var phase: Phase = .connecting
    /// Why the connection ended (or is ending), once it has.
    package private(set) var closedReason: String?
    /// The reason of the Goodbye this end sent or received, if one was.
    package private(set) var goodbyeReason: GoodbyeReason?
    /// Requests from the peer not answered yet.
    package private(set) var answersInFlight = 0
    private var lastReceived: NIODeadline
    private var linkUpAt: NIODeadline
    private var pingNonce: UInt64 = 0
    private var lastPingAt: NIODeadline?

    package init(role: Role, limits: FrameLimits = FrameLimits(), timing: Timing = Timing(), now: NIODeadline) {
        self.role = role
        self.ownLimits = limits
        self.timing = timing
        self.lastReceived = now
        self.linkUpAt = now
    }

    /// Whether requests may be sent and are served.
    package var isOpen: Bool { phase == .open }

    // MARK: the handshake

    /// The link is up and the peer proven. A server starts waiting for Hello; a client gets the
    /// Hello to send, `hello` with this end's frame limit in it.
    package mutating func linkEstablished(hello: Hello?, now: NIODeadline) -> Frame? {
        guard phase == .connecting else { return nil }
        phase = .handshaking
        linkUpAt = now
        lastReceived = now
        guard role == .client else { return nil }
        var hello = hello ?? Hello()
        hello.maxFrameSize = UInt32(ownLimits.maxFrameSize)
        return .hello(hello)
    }

    /// Server: takes the client's Hello; returns the HelloAck to send (`answer` with this end's
    /// version and frame limit in it).
    package mutating func accept(_ hello: Hello, answer: HelloAck) -> Frame? {
        guard role == .server, phase == .handshaking else { return nil }
        var ack = answer
        ack.protocolVersion = 1
        ack.maxFrameSize = UInt32(ownLimits.maxFrameSize)
        peerLimits = FrameLimits(announced: hello.maxFrameSize)
        phase = .open
        return .helloAck(ack)
    }

    // MARK: receiving

    /// What to do with `event`, which arrived at `now`.
    package mutating func receive(_ event: FrameEvent, now: NIODeadline) -> Received {
        guard phase != .closed else { return .nothing }
        // A link says who the peer is before any frame; one that does not is broken.
        guard phase != .connecting else { return goodbye(.protocolError, "a frame came before the link was established") }
        lastReceived = now
        switch event {
        case .oversized(let oversized):
            return receive(oversized)
        case .frame(let frame):
            return receive(frame)
        }
    }

    private mutating func receive(_ frame: Frame) -> Received {
        if phase == .handshaking {
            switch (role, frame) {
            case (.server, .hello(let hello)):
                guard hello.protocolVersion == 1 else {
                    return goodbye(.unsupportedVersion, "this agent speaks protocol version 1, not \(hello.protocolVersion)")
                }
                return .hello(hello)
            case (.client, .helloAck(let ack)):
                peerLimits = FrameLimits(announced: ack.maxFrameSize)
                phase = .open
                return .handshakeDone(ack)
            case (_, .goodbye(let reason, let detail)):
                return receivedGoodbye(reason, detail)
            default:
                return goodbye(.protocolError, role == .server ? "the first frame must be Hello" : "the first frame must be HelloAck")
            }
        }
        switch frame {
        case .hello, .helloAck:
            return goodbye(.protocolError, "a second handshake on an open connection")
        case .describeRequest, .launchRequest, .openServiceRequest, .serviceRequest, .joinRequest:
            if phase == .draining {
                return RequestHead(frame).flatMap { Self.refusal($0, .shuttingDown) }.map(Received.write) ?? .nothing
            }
            answersInFlight += 1
            return .request(frame)
        case .describeResponse, .launchResponse, .openServiceResponse, .serviceResponse, .joinResponse:
            return .response(frame)
        case .closeService(let channel, let status):
            return .channelClosed(channel, status)
        case .ping(let nonce):
            return .write(.pong(nonce: nonce))
        case .pong:
            return .nothing
        case .goodbye(let reason, let detail):
            return receivedGoodbye(reason, detail)
        }
    }

    /// A frame over this end's limit: the request it shows gets a too-large status; a frame
    /// that shows no request ends the connection.
    private mutating func receive(_ oversized: OversizedFrame) -> Received {
        let detail = "the message is \(oversized.length) bytes, over the limit of \(ownLimits.maxFrameSize)"
        guard isOpen || phase == .draining, let head = RequestHead(oversized),
              let answer = Self.refusal(head, .tooLarge(detail)) else {
            return goodbye(.frameTooLarge, "\(oversized)")
        }
        return .write(answer)
    }

    private mutating func receivedGoodbye(_ reason: GoodbyeReason, _ detail: String) -> Received {
        goodbyeReason = reason
        let text = detail.isEmpty ? "\(reason)" : detail
        return close(reason == .shutdown ? "the agent shut down" : "the peer said goodbye: \(text)", goodbye: nil)
    }

    // MARK: answering

    /// One request from the peer has its answer (or never will: the connection is ending).
    /// Returns whether the answer may still be written (the connection is open or draining).
    package mutating func answered() -> Bool {
        answersInFlight -= 1
        return isOpen || phase == .draining
    }

    /// Whether a drain has nothing left to wait for.
    package var isDrained: Bool { phase == .draining && answersInFlight == 0 }

    // MARK: ending

    /// Starts shutting down: requests from now on are refused; the answers in flight may still
    /// go out. Follow with ``goodbye(_:_:)`` once ``isDrained`` (or a grace period is over).
    package mutating func drain() {
        if phase == .open || phase == .handshaking { phase = .draining }
    }

    /// Ends the connection on purpose: the Goodbye to write, then close. Nothing once closed.
    package mutating func goodbye(_ reason: GoodbyeReason, _ detail: String) -> Received {
        guard phase != .closed else { return .nothing }
        goodbyeReason = reason
        return close(reason == .shutdown ? "shut down" : detail, goodbye: .goodbye(reason, detail: detail))
    }

    /// The link is gone (or failed): nothing more is sent or received. Returns the reason
    /// everything pending fails with.
    package mutating func linkClosed(_ reason: String) -> String {
        if closedReason == nil { closedReason = reason }
        phase = .closed
        return closedReason!
    }

    private mutating func close(_ reason: String, goodbye: Frame?) -> Received {
        if closedReason == nil { closedReason = reason }
        phase = .closed
        return .close(goodbye: goodbye, reason: closedReason!)
    }

    /// The status channels still open get when the connection ends: `canceled` after the agent
    /// said it shuts down, `unknown` when the connection was lost.
    package var closedChannelStatus: ClosedStatus { goodbyeReason == .shutdown ? .canceled : .unknown }

    // MARK: time

    /// What the time `now` calls for: Goodbye to a client that never said Hello or a peer
    /// silent too long, or a Ping after silence.
    package mutating func tick(now: NIODeadline) -> Received {
        switch phase {
        case .connecting where role == .server:
            // The link never came up (a TLS handshake that never finished): nothing can be
            // said over it, only closed.
            guard now - linkUpAt >= timing.helloTimeout else { return .nothing }
            return close("no TLS handshake within \(timing.helloTimeout.seconds) s", goodbye: nil)
        case .connecting, .closed:
            return .nothing
        case .handshaking where role == .server:
            guard now - linkUpAt >= timing.helloTimeout else { return .nothing }
            return goodbye(.timeout, "no Hello within \(timing.helloTimeout.seconds) s")
        default:
            let silent = now - lastReceived
            if silent >= timing.deadAfter {
                return goodbye(.timeout, "the peer was silent for \(silent.seconds) s")
            }
            if now >= pingDue, isOpen || phase == .draining {
                pingNonce &+= 1
                lastPingAt = now
                return .write(.ping(nonce: pingNonce))
            }
            return .nothing
        }
    }

    /// A Ping after `pingAfter` of silence, and again after as much more.
    private var pingDue: NIODeadline {
        max(lastReceived, lastPingAt ?? lastReceived) + timing.pingAfter
    }

    /// When ``tick(now:)`` next has something to do, if nothing arrives before.
    package var nextDeadline: NIODeadline? {
        switch phase {
        case .connecting where role == .server, .handshaking where role == .server:
            return linkUpAt + timing.helloTimeout
        case .connecting, .closed:
            return nil
        default:
            return min(pingDue, lastReceived + timing.deadAfter)
        }
    }
}

extension TimeAmount {
    /// Whole seconds, for messages.
    var seconds: Int64 { nanoseconds / 1_000_000_000 }
}
