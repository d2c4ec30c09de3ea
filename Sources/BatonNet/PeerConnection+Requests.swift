import BatonCore
import BatonWire
import NIOCore

// This end's requests: each waits for its answer until its deadline (the connection's
// `requestTimeout` unless given), and the peer is told how long that is.
extension PeerConnection {
    /// Writes `frame` to the link; the peer's frame limit applies.
    @discardableResult
    func write(_ frame: Frame) -> PeerConnectionError? {
        let problem = link.write(limit: session.peerLimits.maxFrameSize) { out, limit throws(WireError) in
            try FrameEncoder.encode(frame, into: &out, maxFrameSize: limit)
        }
        switch problem {
        case nil: return nil
        case .frameTooLarge(let size, let limit)?: return .tooLarge(size: size, limit: limit)
        case let error?: return .closed("\(error)")
        }
    }

    /// Sends the request `make` builds with a fresh id and how long it will be waited for, in
    /// milliseconds; `completion` gets the answer, or why there is none (by `deadline`).
    private func request(
        channel: UInt64? = nil, deadline: NIODeadline?, _ make: (UInt64, UInt32) -> Frame,
        _ recipient: RequestMultiplexer.Recipient
    ) {
        eventLoop.preconditionInEventLoop()
        let tell = { (result: Result<Frame, PeerConnectionError>) in
            RequestMultiplexer.Completion(recipient: recipient, result: result).run()
        }
        guard isOpen else { return tell(.failure(.closed(session.closedReason ?? "not connected"))) }
        let now = eventLoop.now
        let deadline = deadline ?? now + timing.requestTimeout
        let wait = deadline - now
        guard wait > .zero else { return tell(.failure(.timedOut("timed out: the deadline passed before the request was sent"))) }
        let id = multiplexer.makeRequestID()
        let milliseconds = UInt32(clamping: (wait.nanoseconds + 999_999) / 1_000_000)
        if let problem = write(make(id, milliseconds)) { return tell(.failure(problem)) }
        multiplexer.await(id, channel: channel, until: deadline, timeout: wait, recipient)
        armDeadlines(deadline)
    }

    /// As ``request(channel:deadline:_:_:)``, answered by the frame `extract` finds in the answer.
    private func request<T: Sendable>(
        deadline: NIODeadline?, _ make: (UInt64, UInt32) -> Frame, _ extract: @escaping (Frame) -> T?
    ) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        request(deadline: deadline, make, .frame { result in
            switch result {
            case .success(let frame):
                guard let value = extract(frame) else {
                    return promise.fail(PeerConnectionError.closed("the peer answered with \(frame)"))
                }
                promise.succeed(value)
            case .failure(let error):
                promise.fail(error)
            }
        })
        return promise.futureResult
    }

    /// Asks for the device and its apps, by `deadline` (nil: in the connection's
    /// `requestTimeout`); fails when the agent would not say, or did not in time
    /// (``PeerConnectionError/timedOut(_:)``).
    public func describe(deadline: NIODeadline? = nil) -> EventLoopFuture<DeviceDescription> {
        request(deadline: deadline, { .describeRequest(requestID: $0, timeout: $1) }) { frame -> Result<DeviceDescription, PeerConnectionError>? in
            guard case .describeResponse(_, let result) = frame else { return nil }
            switch result {
            case .success(let description?): return .success(description)
            case .success(nil): return .failure(.refusedByPeer("the agent did not describe itself (is it shutting down?)"))
            case .failure(let error): return .failure(.refusedByPeer("the agent's description is not valid: \(error)"))
            }
        }.flatMapResult { $0 }
    }

    /// Asks the peer to launch `request` by `deadline`: the status and, if not `success`, why.
    public func launch(_ request: LaunchRequest, deadline: NIODeadline? = nil) -> EventLoopFuture<(LaunchStatus, String)> {
        self.request(deadline: deadline, { .launchRequest(requestID: $0, .success(request), timeout: $1) }) { frame in
            guard case .launchResponse(_, let status, let detail) = frame else { return nil }
            return (status, detail)
        }
    }

    /// Asks the agent to enrol this device with an invite code, by `deadline`.
    public func join(_ request: JoinRequest, deadline: NIODeadline? = nil) -> EventLoopFuture<JoinAnswer> {
        self.request(deadline: deadline, { .joinRequest(requestID: $0, request, timeout: $1) }) { frame in
            guard case .joinResponse(_, let answer) = frame else { return nil }
            return answer
        }
    }

    /// Opens a channel to `service` of `app` by `deadline`, served on this end by `handler`
    /// (the peer's requests on it, and its closing): on `success`, the channel's id.
    public func open(
        service: String, app: String, handler: any ServiceChannelHandler, deadline: NIODeadline? = nil
    ) -> EventLoopFuture<(channelID: UInt64?, status: OpenStatus, detail: String)> {
        let channel = multiplexer.makeChannelID()
        return request(deadline: deadline, { .openServiceRequest(requestID: $0, channelID: channel, service: service, app: app, timeout: $1) }) { [self] frame in
            guard case .openServiceResponse(_, let status, let detail) = frame else { return nil }
            guard status == .success, isOpen else { return (nil, status, detail) }
            multiplexer.open(channel, handler: handler)
            return (channel, status, detail)
        }
    }

    /// Sends a request on an open channel (either end may), waiting by `deadline`;
    /// `completion` runs once, on the loop, with the peer's reply or the status that takes its
    /// place: `remote_system_unavailable` when the connection is lost, `message_size_too_large`
    /// over the peer's limit, `app_service_connection_closed` when the channel is not open or
    /// closes first, `unknown` (timed out) when the deadline passes.
    public func send(
        channel: UInt64, message: ServiceMessage, deadline: NIODeadline? = nil, completion: @escaping (ServiceReply) -> Void
    ) {
        guard multiplexer.isOpen(channel) else {
            return completion(ServiceReply(status: .appServiceConnectionClosed, detail: "channel \(channel) is not open"))
        }
        request(channel: channel, deadline: deadline, { .serviceRequest(channelID: channel, requestID: $0, message: message, timeout: $1) },
                .reply(completion))
    }

    /// Closes a channel from this end: the peer hears `status`; requests this end still waits
    /// for on it get `app_service_connection_closed`. Its handler is not told (this end knows).
    public func close(channel: UInt64, status: ClosedStatus = .completed) {
        eventLoop.preconditionInEventLoop()
        guard let (_, completions) = multiplexer.close(channel) else { return }
        if isOpen || session.phase == .draining { write(.closeService(channelID: channel, status: status)) }
        for completion in completions { completion.run() }
    }

    /// Whether channel `id` is open.
    public func isChannelOpen(_ id: UInt64) -> Bool {
        eventLoop.preconditionInEventLoop()
        return multiplexer.isOpen(id)
    }
}

extension ServiceReply {
    /// The reply a ServiceRequest's sender hears for `result`: the peer's, or the status that
    /// takes its place when there is none.
    init(answering result: Result<Frame, PeerConnectionError>) {
        switch result {
        case .success(.serviceResponse(_, _, let reply)):
            self = reply
        case .success(let frame):
            self.init(status: .unknown, detail: "the peer answered with \(frame)")
        case .failure(.tooLarge(let size, let limit)):
            self.init(status: .messageSizeTooLarge, detail: "the message is \(size) bytes, over the agent's limit of \(limit)", cause: .tooLarge)
        case .failure(.timedOut(let detail)):
            self.init(status: .unknown, detail: detail, cause: .timedOut)
        case .failure(let error):
            self.init(status: .remoteSystemUnavailable, detail: "\(error)", cause: error.cause)
        }
    }
}
