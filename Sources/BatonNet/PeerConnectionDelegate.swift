import BatonCore
import BatonWire
import NIOCore

/// What one end of a connection does with what the other end asks. Called on the
/// connection's event loop. Every method has a default that refuses politely, so a client
/// need only implement what it serves (requests on its open channels).
public protocol PeerConnectionDelegate: AnyObject, Sendable {
    /// The agent's answer to a client's Hello; nil refuses the client (Goodbye and close).
    func connection(_ connection: PeerConnection, hello: Baton_V1_Hello) -> Baton_V1_HelloAck?
    func connection(_ connection: PeerConnection, describe request: Baton_V1_DescribeRequest) -> EventLoopFuture<Baton_V1_DescribeResponse>
    func connection(_ connection: PeerConnection, launch request: Baton_V1_LaunchRequest) -> EventLoopFuture<Baton_V1_LaunchResponse>
    /// Opening a channel: answer SUCCESS to accept it (the connection then tracks it).
    func connection(_ connection: PeerConnection, open request: Baton_V1_OpenServiceRequest) -> EventLoopFuture<Baton_V1_OpenServiceResponse>
    /// A request on an open channel: answer it through `responder`, exactly once, on the loop
    /// (at once or later).
    func connection(_ connection: PeerConnection, request: ServiceRequestFrame, responder: ServiceResponder)
    /// Enrolling the caller's device with an invite code (only an agent holding the account's
    /// key can); the default answers NOT_SUPPORTED.
    func connection(_ connection: PeerConnection, join request: Baton_V1_JoinRequest) -> EventLoopFuture<Baton_V1_JoinResponse>
    /// A channel ended: closed by either side, or lost with the connection.
    func connection(_ connection: PeerConnection, channelClosed channelID: UInt64, status: Baton_V1_ClosedStatus)
    /// The connection is gone; `reason` says why, for logs.
    func connectionClosed(_ connection: PeerConnection, reason: String)
}

extension PeerConnectionDelegate {
    public func connection(_ connection: PeerConnection, hello: Baton_V1_Hello) -> Baton_V1_HelloAck? { nil }

    public func connection(_ connection: PeerConnection, describe request: Baton_V1_DescribeRequest) -> EventLoopFuture<Baton_V1_DescribeResponse> {
        var response = Baton_V1_DescribeResponse()
        response.requestID = request.requestID
        return connection.eventLoop.makeSucceededFuture(response)
    }

    public func connection(_ connection: PeerConnection, launch request: Baton_V1_LaunchRequest) -> EventLoopFuture<Baton_V1_LaunchResponse> {
        var response = Baton_V1_LaunchResponse()
        response.requestID = request.requestID
        response.status = .protocolUnavailable
        response.detail = "this end does not launch"
        return connection.eventLoop.makeSucceededFuture(response)
    }

    public func connection(_ connection: PeerConnection, open request: Baton_V1_OpenServiceRequest) -> EventLoopFuture<Baton_V1_OpenServiceResponse> {
        var response = Baton_V1_OpenServiceResponse()
        response.requestID = request.requestID
        response.status = .appServiceUnavailable
        response.detail = "this end provides no services"
        return connection.eventLoop.makeSucceededFuture(response)
    }

    public func connection(_ connection: PeerConnection, join request: Baton_V1_JoinRequest) -> EventLoopFuture<Baton_V1_JoinResponse> {
        var response = Baton_V1_JoinResponse()
        response.requestID = request.requestID
        response.status = .notSupported
        response.detail = "this end does not enrol devices"
        return connection.eventLoop.makeSucceededFuture(response)
    }

    public func connection(_ connection: PeerConnection, request: ServiceRequestFrame, responder: ServiceResponder) {
        responder.respond(.failure, detail: "nothing here answers requests on this channel")
    }

    public func connection(_ connection: PeerConnection, channelClosed channelID: UInt64, status: Baton_V1_ClosedStatus) {}
    public func connectionClosed(_ connection: PeerConnection, reason: String) {}
}
