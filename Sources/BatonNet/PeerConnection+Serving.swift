import BatonCore
import BatonWire
import NIOCore

// Serving the peer's requests: each gets exactly one answer, by its deadline at the latest.
extension PeerConnection {
    /// Hands a request of the peer to whoever serves it, with its ``RequestContext``.
    func serve(_ frame: Frame) {
        // Requests on channels, the hot ones, first.
        if case .serviceRequest(let channel, let id, let message, let timeout) = frame {
            return serve(message, on: channel, requestID: id, timeout: timeout)
        }
        guard let head = RequestHead(frame), let id = frame.requestID, let timeout = frame.timeout else {
            preconditionFailure("\(frame) is not a request")
        }
        let context = track(head, timeout: timeout)
        let delegate = self.delegate ?? RefusingDelegate.shared
        switch frame {
        case .describeRequest:
            answer(delegate.connectionDescribe(self, context: context), to: frame) { .describeResponse(requestID: id, .success($0)) }
        case .launchRequest(_, .failure(let error), _):
            answer(.launchResponse(requestID: id, status: error.isOverLimit ? .valueSetTooLarge : .unknown, detail: "bad launch data: \(error)"))
        case .launchRequest(_, .success(let request), _):
            answer(delegate.connection(self, launch: request, context: context), to: frame) {
                .launchResponse(requestID: id, status: $0.0, detail: $0.1)
            }
        case .openServiceRequest(_, let channel, let service, let app, _):
            guard !multiplexer.isOpen(channel) else { return answer(refusal(head, .channelAlreadyOpen)) }
            let channels = isAnonymousPeer ? serving.anonymousChannels : serving.channels
            guard multiplexer.channelCount < channels else {
                return answer(refusal(head, .limitReached("\(channels) channels are open on this connection, as many as it may have")))
            }
            answer(delegate.connection(self, open: service, app: app, channelID: channel, context: context), to: frame) { [self] answer in
                if answer.status == .success, let handler = answer.handler, isOpen { multiplexer.open(channel, handler: handler) }
                return .openServiceResponse(requestID: id, status: answer.status, detail: answer.detail)
            }
        case .joinRequest(_, let request, _):
            answer(delegate.connection(self, join: request, context: context), to: frame) { .joinResponse(requestID: id, $0) }
        default:
            preconditionFailure("\(frame) is not a request")
        }
    }

    /// A ServiceRequest: to the handler of its channel.
    private func serve(_ message: ServiceMessage, on channel: UInt64, requestID id: UInt64, timeout: UInt32) {
        let head = RequestHead(kind: .service, requestID: id, channelID: channel)
        let context = track(head, timeout: timeout)
        guard let handler = multiplexer.handler(of: channel) else { return answer(refusal(head, .channelNotOpen)) }
        handler.channel(channel, of: self, request: message, responder: ServiceResponder(connection: self, channelID: channel, requestID: id, context: context))
    }

    /// Keeps the request `head` as in flight until its answer, by the deadline its `timeout`
    /// (ms, 0: none given) sets; returns its context.
    private func track(_ head: RequestHead, timeout: UInt32) -> RequestContext {
        let wait = timeout > 0 ? TimeAmount.milliseconds(Int64(timeout)) : timing.requestTimeout
        // Counted from when the request was read, as the protocol says.
        let context: RequestContext
        if let spare = spareContext() {
            spare.reuse(for: head, start: receivedAt, timeout: wait)
            context = spare
        } else {
            context = RequestContext(head, start: receivedAt, timeout: wait, on: eventLoop)
        }
        inFlight[head.requestID] = context
        armDeadlines(context.deadline)
        if !receivingPaused, inFlight.count >= inFlightLimit {
            // Enough at once: the peer's next requests wait in its socket until half are done.
            receivingPaused = true
            link.pauseReceiving(true)
        }
        return context
    }

    /// How many of the peer's requests this end serves at once.
    private var inFlightLimit: Int { isAnonymousPeer ? serving.anonymousRequestsInFlight : serving.requestsInFlight }

    /// Whether the peer is of another account, or none.
    var isAnonymousPeer: Bool { peerIdentity?.authorization == .anonymous }

    /// A request left ``inFlight``: reading goes on once half of the limit is free again.
    func servingEased() {
        if receivingPaused, inFlight.count <= inFlightLimit / 2 {
            receivingPaused = false
            link.pauseReceiving(false)
        }
    }

    /// The context of an answered request that nothing holds any more, if there is one. The
    /// last answered is tried first (what served it is the likeliest to be done with it); one
    /// still held is let go.
    private func spareContext() -> RequestContext? {
        while var spare = spareContexts.popLast() {
            if isKnownUniquelyReferenced(&spare) { return spare }
        }
        return nil
    }

    /// `context`'s request was answered: it is done with, and kept for a later request.
    private func retire(_ context: RequestContext) {
        context.finish()
        if spareContexts.count < Self.spareContextLimit { spareContexts.append(context) }
    }

    /// At most this many answered contexts are kept: a full window of pipelined requests.
    static let spareContextLimit = 64

    private func refusal(_ head: RequestHead, _ why: Refusal) -> Frame {
        SessionStateMachine.refusal(head, why)!
    }

    /// Answers `request` with what `future` gives, made into a frame by `make`; a failed future
    /// gets the refusal of its kind.
    private func answer<T: Sendable>(_ future: EventLoopFuture<T>, to request: Frame, _ make: @escaping (T) -> Frame) {
        let make = NIOLoopBound(make, eventLoop: eventLoop)
        future.hop(to: eventLoop).whenComplete { [self] result in
            switch result {
            case .success(let value): answer(make.value(value))
            case .failure(let error): answer(refusal(RequestHead(request)!, .failed("\(error)")))
            }
        }
    }

    /// Sends the answer to one of the peer's requests, if it still waits for one (the
    /// connection is up, the request not answered yet, its deadline not past); one over the
    /// peer's frame limit goes as the too-large answer of its kind.
    func answer(_ frame: Frame) {
        guard let id = frame.requestID, let context = inFlight.removeValue(forKey: id) else { return }
        retire(context)
        send(answer: frame)
        servingEased()
    }

    /// Writes the answer to a request taken out of ``inFlight``.
    private func send(answer frame: Frame) {
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
        guard let context = inFlight.removeValue(forKey: requestID) else { return true }
        guard session.isOpen || session.phase == .draining else {
            // Nobody to tell any more.
            retire(context)
            send(answer: .serviceResponse(channelID: channelID, requestID: requestID, reply: ServiceReply(status: .unknown)))
            return true
        }
        var gaveUp = false
        let problem = link.write(limit: session.peerLimits.maxFrameSize) { out, limit throws(WireError) in
            gaveUp = try !FrameEncoder.encodeServiceResponse(
                channelID: channelID, requestID: requestID, source: source, into: &out, maxFrameSize: limit)
        }
        guard !gaveUp else {
            // Still to be answered, the usual way.
            inFlight[requestID] = context
            return false
        }
        retire(context)
        defer { servingEased() }
        guard case .frameTooLarge(let size, let limit)? = problem else {
            _ = session.answered()
            if session.isDrained { drained?() }
            return true
        }
        // The too-large answer takes its place, counted once.
        let written = Frame.serviceResponse(channelID: channelID, requestID: requestID, reply: ServiceReply(status: .success))
        send(answer: SessionStateMachine.fallback(for: written, size: size, limit: limit)!)
        return true
    }

    /// The requests of the peer whose deadline is past at `now`: their servers are told to stop,
    /// and the peer hears a timeout status.
    func expireServing(at now: NIODeadline) {
        for (id, context) in inFlight where context.deadline <= now {
            logger.notice("a request was not answered by its deadline", metadata: ["request": "\(id)", "kind": "\(context.head.kind)"])
            // The timeout is the answer: what the cancelled work still says comes too late.
            inFlight[id] = nil
            send(answer: refusal(context.head, .timedOut("timed out: no answer within \(context.timeout.words)")))
            context.cancel()
        }
        servingEased()
    }

    /// The connection ended: whatever still serves a request of the peer is told to stop.
    func cancelServing() {
        let contexts = inFlight.values
        inFlight = [:]
        spareContexts = []
        for context in contexts { context.cancel() }
    }
}

/// Answers for a connection that has no delegate: the protocol's polite refusals.
final class RefusingDelegate: PeerConnectionDelegate {
    static let shared = RefusingDelegate()
}
