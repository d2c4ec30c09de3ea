import BatonCore
import BatonWire
import NIOCore

/// What one end of a connection does with what the other end asks, outside any channel.
/// Called on the connection's event loop. Every method has a default that refuses politely,
/// so a client need implement nothing.
public protocol PeerConnectionDelegate: AnyObject, Sendable {
    /// An agent's answer to a client's Hello: its device; nil refuses the client (Goodbye and
    /// close).
    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo?
    /// The device and the apps this caller may see. `context` says by when, and whether the
    /// caller gave up (as for every request below).
    func connectionDescribe(_ connection: PeerConnection, context: RequestContext) -> EventLoopFuture<DeviceDescription>
    /// A launch: its status and, if not `success`, why.
    func connection(_ connection: PeerConnection, launch request: LaunchRequest, context: RequestContext) -> EventLoopFuture<(LaunchStatus, String)>
    /// Opening channel `channelID` to `service` of `app`: `success` with the handler that
    /// serves it, or another status and why.
    func connection(
        _ connection: PeerConnection, open service: String, app: String, channelID: UInt64, context: RequestContext
    ) -> EventLoopFuture<OpenAnswer>
    /// Enrolling the caller's device with an invite code (only an agent holding the account's
    /// key can); the default answers `not_supported`.
    func connection(_ connection: PeerConnection, join request: JoinRequest, context: RequestContext) -> EventLoopFuture<JoinAnswer>
    /// The connection is gone; `reason` says why, for logs. Its channels' handlers heard first.
    func connectionClosed(_ connection: PeerConnection, reason: String)
}

/// The answer to opening a channel.
public struct OpenAnswer: Sendable {
    public var status: OpenStatus
    /// For people: why, when not `success`.
    public var detail: String
    /// Who serves the channel; set with `success`.
    public var handler: (any ServiceChannelHandler)?

    /// `success`, served by `handler`.
    public static func success(_ handler: any ServiceChannelHandler) -> OpenAnswer {
        OpenAnswer(status: .success, detail: "", handler: handler)
    }

    /// A refusal with `status` and why.
    public static func refused(_ status: OpenStatus, _ detail: String) -> OpenAnswer {
        OpenAnswer(status: status, detail: detail, handler: nil)
    }
}

/// Who serves one open app-service channel, on its connection's loop.
public protocol ServiceChannelHandler: AnyObject, Sendable {
    /// A request from the peer on the channel: answer it through `responder`, exactly once,
    /// at once or later. The message may break the Value rules (`message.values` says why);
    /// answer such a request `failure`.
    func channel(_ channelID: UInt64, of connection: PeerConnection, request message: ServiceMessage, responder: ServiceResponder)
    /// The channel closed: the peer closed it (`completed`), the agent shut down (`canceled`)
    /// or the connection was lost (`unknown`). Not called when this end closed it.
    func channelClosed(_ channelID: UInt64, status: ClosedStatus)
}

extension PeerConnectionDelegate {
    public func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? { nil }

    public func connectionDescribe(_ connection: PeerConnection, context: RequestContext) -> EventLoopFuture<DeviceDescription> {
        connection.eventLoop.makeFailedFuture(PeerConnectionError.refusedByPeer("this end does not describe itself"))
    }

    public func connection(_ connection: PeerConnection, launch request: LaunchRequest, context: RequestContext) -> EventLoopFuture<(LaunchStatus, String)> {
        connection.eventLoop.makeSucceededFuture((.protocolUnavailable, "this end does not launch"))
    }

    public func connection(
        _ connection: PeerConnection, open service: String, app: String, channelID: UInt64, context: RequestContext
    ) -> EventLoopFuture<OpenAnswer> {
        connection.eventLoop.makeSucceededFuture(.refused(.appServiceUnavailable, "this end provides no services"))
    }

    public func connection(_ connection: PeerConnection, join request: JoinRequest, context: RequestContext) -> EventLoopFuture<JoinAnswer> {
        connection.eventLoop.makeSucceededFuture(JoinAnswer(status: .notSupported, detail: "this end does not enrol devices"))
    }

    public func connectionClosed(_ connection: PeerConnection, reason: String) {}
}

/// Answers one request on a channel, once, on the connection's loop. Every request gets
/// exactly one response: a handler must use its responder exactly once.
public struct ServiceResponder: Sendable {
    let connection: PeerConnection
    let channelID: UInt64
    let requestID: UInt64
    /// By when the peer wants the answer, and whether it gave up.
    public let context: RequestContext

    /// Sends `reply`; one over the peer's frame limit goes as `message_size_too_large` instead.
    public func respond(_ reply: ServiceReply) {
        connection.answer(.serviceResponse(channelID: channelID, requestID: requestID, reply: reply))
    }

    /// Answers `success` with the message `source` writes straight into the frame, as
    /// ``respond(_:)`` would the same message made of Values. Returns false, answering nothing,
    /// when `source` gives up: the request still waits for its one answer.
    package func respond(source: some MessageSource) -> Bool {
        connection.answer(channelID: channelID, requestID: requestID, source: source)
    }
}
