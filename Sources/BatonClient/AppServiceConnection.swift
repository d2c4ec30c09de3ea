import BatonCore
import BatonNet
import BatonWire
import NIOCore

/// An open channel to an app service on another device. Requests go both ways: `send` asks
/// the service; the service's own requests reach ``onRequest``. Confined to the client's loop
/// for the callback properties; `send` and `close` may be called from anywhere.
public final class AppServiceConnection: @unchecked Sendable {
    /// The device it is open to.
    public let device: DeviceAddress
    public let app: String
    public let service: String
    /// The channel's id on its connection.
    public let channelID: UInt64
    let connection: PeerConnection
    /// Answers the service's requests; without it they get `failure`. Runs on the loop.
    public var onRequest: ((ValueDictionary) -> EventLoopFuture<ServiceReplyMessage>)?
    /// Told once when the channel closes: `completed` (either side closed), `canceled` (the
    /// agent shut down) or `unknown` (the connection was lost). Runs on the loop.
    public var onClosed: ((ClosedStatus) -> Void)?
    /// Nil while open.
    public private(set) var closedStatus: ClosedStatus?

    init(device: DeviceAddress, app: String, service: String, channelID: UInt64, connection: PeerConnection) {
        self.device = device
        self.app = app
        self.service = service
        self.channelID = channelID
        self.connection = connection
    }

    /// Sends `message` and waits for the reply: `success` with the message, or another status
    /// (`remote_system_unavailable` if the connection is lost, `message_size_too_large` if it
    /// is over the agent's limit, `app_service_connection_closed` if the channel closed).
    public func send(_ message: ValueDictionary) -> EventLoopFuture<ServiceReplyMessage> {
        let loop = connection.eventLoop
        // Callers on the connection's loop (scripts, the benchmark) need no hop.
        if loop.inEventLoop { return sendOnLoop(message) }
        return loop.flatSubmit { [self] in sendOnLoop(message) }
    }

    private func sendOnLoop(_ message: ValueDictionary) -> EventLoopFuture<ServiceReplyMessage> {
        let loop = connection.eventLoop
        guard closedStatus == nil else {
            return loop.makeSucceededFuture(ServiceReplyMessage(status: .appServiceConnectionClosed, detail: "the channel is closed"))
        }
        let promise = loop.makePromise(of: ServiceReplyMessage.self)
        connection.send(channel: channelID, message: message) { result in
            switch result {
            case .success(let response): promise.succeed(ServiceReplyMessage(response))
            case .failure(let error): promise.succeed(ServiceReplyMessage(failure: error))
            }
        }
        return promise.futureResult
    }

    /// As ``send(_:)``, with async/await.
    public func send(_ message: ValueDictionary) async -> ServiceReplyMessage {
        (try? await send(message).get()) ?? ServiceReplyMessage(status: .unknown)
    }

    /// Closes the channel; the service hears `completed`. Closing twice does nothing.
    public func close() {
        connection.eventLoop.execute { [self] in
            guard closedStatus == nil else { return }
            connection.close(channel: channelID, status: .completed)
            closed(.completed)
        }
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

/// A reply on an app-service channel.
public struct ServiceReplyMessage: Sendable, Equatable {
    public var status: ResponseStatus
    /// The reply when `status` is `success`.
    public var message: ValueDictionary?
    /// For people: why, when not `success`.
    public var detail: String

    public init(status: ResponseStatus, message: ValueDictionary? = nil, detail: String = "") {
        self.status = status
        self.message = message
        self.detail = detail
    }

    /// The reply a wire response carries; a malformed message becomes `failure`.
    public init(wire: Baton_V1_ServiceResponse) {
        let status = ResponseStatus(wire: wire.status)
        if status == .success {
            do {
                self.init(status: .success, message: try ValueDictionary(wire: wire.message), detail: wire.detail)
            } catch {
                self.init(status: .failure, detail: "the reply is not a valid message: \(error)")
            }
        } else {
            self.init(status: status, detail: wire.detail)
        }
    }

    /// The reply a response carries; as ``init(wire:)``, for a response whose message came
    /// converted already.
    public init(_ response: ServiceResponseFrame) {
        let status = ResponseStatus(wire: response.status)
        guard status == .success else {
            self.init(status: status, detail: response.detail)
            return
        }
        switch response.message {
        case .success(let message):
            self.init(status: .success, message: message, detail: response.detail)
        case .failure(let error):
            self.init(status: .failure, detail: "the reply is not a valid message: \(error)")
        }
    }

    /// The status a failed request gets: too large, channel closed, or device unavailable.
    public init(failure error: any Error) {
        switch error {
        case PeerConnectionError.tooLarge(let size, let limit):
            self.init(status: .messageSizeTooLarge, detail: "the message is \(size) bytes, over the agent's limit of \(limit)")
        case PeerConnectionError.noSuchChannel:
            self.init(status: .appServiceConnectionClosed, detail: "\(error)")
        default:
            self.init(status: .remoteSystemUnavailable, detail: "\(error)")
        }
    }
}
