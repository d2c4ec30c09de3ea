import BatonCore
import BatonNet
import BatonWire
import NIOCore

/// An open channel to an app service on another device. Requests go both ways: `send` asks
/// the service; the service's own requests reach ``onRequest``. Confined to the client's loop
/// for the callback properties; `send` and `close` may be called from anywhere.
public final class AppServiceConnection: ServiceChannelHandler, @unchecked Sendable {
    /// The device it is open to.
    public let device: DeviceTarget
    public let app: String
    public let service: String
    /// The channel's id on its connection (0 until it is open).
    public private(set) var channelID: UInt64 = 0
    let connection: PeerConnection
    /// Answers the service's requests; without it they get `failure`. Runs on the loop.
    public var onRequest: ((ValueDictionary) -> EventLoopFuture<ServiceReply>)?
    /// Told once when the channel closes: `completed` (either side closed), `canceled` (the
    /// agent shut down) or `unknown` (the connection was lost). Runs on the loop.
    public var onClosed: ((ClosedStatus) -> Void)?
    /// Nil while open.
    public private(set) var closedStatus: ClosedStatus?

    init(device: DeviceTarget, app: String, service: String, connection: PeerConnection) {
        self.device = device
        self.app = app
        self.service = service
        self.connection = connection
    }

    /// The channel opened under `id`.
    func opened(_ id: UInt64) {
        channelID = id
    }

    /// Sends `message` and waits for the reply, `timeout` at most (nil: the client's
    /// `requestTimeout`): `success` with the message, or another status
    /// (`remote_system_unavailable` if the connection is lost, `message_size_too_large` if it
    /// is over the agent's limit, `app_service_connection_closed` if the channel closed,
    /// `unknown` with "timed out" when the timeout passes).
    public func send(_ message: ValueDictionary, timeout: TimeAmount? = nil) -> EventLoopFuture<ServiceReply> {
        let loop = connection.eventLoop
        // Callers on the connection's loop (scripts, the benchmark) need no hop. The deadline is
        // reckoned there, so the wait is the one given; without one, the connection reckons its
        // own (one clock read, not two).
        if loop.inEventLoop { return sendOnLoop(message, deadline: timeout.map { loop.now + $0 }) }
        return loop.flatSubmit { [self] in sendOnLoop(message, deadline: timeout.map { loop.now + $0 }) }
    }

    /// As ``send(_:timeout:)``, by `deadline`.
    func send(_ message: ValueDictionary, deadline: NIODeadline) -> EventLoopFuture<ServiceReply> {
        let loop = connection.eventLoop
        if loop.inEventLoop { return sendOnLoop(message, deadline: deadline) }
        return loop.flatSubmit { [self] in sendOnLoop(message, deadline: deadline) }
    }

    /// Sends on the loop, by `deadline` (nil: the connection's `requestTimeout` from now).
    private func sendOnLoop(_ message: ValueDictionary, deadline: NIODeadline?) -> EventLoopFuture<ServiceReply> {
        let loop = connection.eventLoop
        guard closedStatus == nil else {
            return loop.makeSucceededFuture(ServiceReply(status: .appServiceConnectionClosed, detail: "the channel is closed"))
        }
        let promise = loop.makePromise(of: ServiceReply.self)
        connection.send(channel: channelID, message: ServiceMessage(message), deadline: deadline, completion: promise.succeed)
        return promise.futureResult
    }

    /// As ``send(_:timeout:)``, with async/await.
    public func send(_ message: ValueDictionary, timeout: TimeAmount? = nil) async -> ServiceReply {
        (try? await send(message, timeout: timeout).get()) ?? ServiceReply(status: .unknown)
    }

    /// Closes the channel; the service hears `completed`. Closing twice does nothing.
    public func close() {
        // At once when called on the loop (a request handler closing the channel): its
        // CloseService then goes before anything the handler answers later.
        guard connection.eventLoop.inEventLoop else {
            return connection.eventLoop.execute { [self] in close() }
        }
        guard closedStatus == nil else { return }
        connection.close(channel: channelID, status: .completed)
        closed(.completed)
    }

    // MARK: ServiceChannelHandler

    public func channel(_ channelID: UInt64, of connection: PeerConnection, request message: ServiceMessage, responder: ServiceResponder) {
        connection.eventLoop.assertInEventLoop()
        guard let onRequest else {
            return responder.respond(ServiceReply(status: .failure, detail: "the client does not answer requests on this channel"))
        }
        switch message.values {
        case .success(let message):
            onRequest(message).hop(to: connection.eventLoop).whenComplete { result in
                switch result {
                case .success(let reply): responder.respond(reply)
                case .failure(let error): responder.respond(ServiceReply(status: .failure, detail: "\(error)"))
                }
            }
        case .failure(let error):
            responder.respond(ServiceReply(status: error.isOverLimit ? .resourceLimitsExceeded : .failure, detail: "bad message: \(error)"))
        }
    }

    public func channelClosed(_ channelID: UInt64, status: ClosedStatus) {
        connection.eventLoop.assertInEventLoop()
        closed(status)
    }

    func closed(_ status: ClosedStatus) {
        guard closedStatus == nil else { return }
        closedStatus = status
        onClosed?(status)
    }

    /// The closed event as an async sequence of one element.
    public var closedEvents: AsyncStream<ClosedStatus> {
        AsyncStream { continuation in
            connection.eventLoop.execute { [self] in
                if let closedStatus {
                    continuation.yield(closedStatus)
                    continuation.finish()
                    return
                }
                let previous = onClosed
                onClosed = { status in
                    previous?(status)
                    continuation.yield(status)
                    continuation.finish()
                }
            }
        }
    }
}
