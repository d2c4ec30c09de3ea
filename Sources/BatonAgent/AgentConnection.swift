import BatonCore
import BatonLua
import BatonNet
import BatonWire
import NIOCore

/// Serves one client connection from the agent: handshake, describe, launch, and the
/// app-service channels the client opens on it.
final class AgentConnection: PeerConnectionDelegate, @unchecked Sendable {
    let agent: Agent
    /// The agent's number for this connection.
    let number: Int
    weak var connection: PeerConnection?
    /// Channel id → the channel's app, service and Lua object.
    var channels: [UInt64: ServiceChannel] = [:]

    struct ServiceChannel {
        let app: String
        let service: String
        /// The `conn` table providers receive.
        let conn: ChannelObjects.Channel
        /// The provider and how reports name its tasks, looked up once, not per request (the
        /// configured apps do not change once the agent runs).
        let provider: LuaReference?
        let taskName: String

        init(app: String, service: String, conn: ChannelObjects.Channel, provider: LuaReference?, taskName: String) {
            self.app = app
            self.service = service
            self.conn = conn
            self.provider = provider
            self.taskName = taskName
        }
    }

    init(agent: Agent, number: Int, connection: PeerConnection) {
        self.agent = agent
        self.number = number
        self.connection = connection
    }

    /// Who the caller proved to be in the TLS handshake; a connection without one is served as
    /// a stranger.
    private func caller(_ connection: PeerConnection) -> AuthorizationKind {
        connection.peerIdentity?.authorization ?? .anonymous
    }

    func connection(_ connection: PeerConnection, hello: Baton_V1_Hello) -> Baton_V1_HelloAck? {
        agent.logger.debug("client connected", metadata: [
            "peer": "\(connection.remoteAddress?.description ?? "?")", "client": "\(hello.deviceName)",
            "authorization": "\(caller(connection).rawValue)",
        ])
        return .with { $0.device = Baton_V1_Device(agent.configuration.device) }
    }

    func connection(_ connection: PeerConnection, describe request: Baton_V1_DescribeRequest) -> EventLoopFuture<Baton_V1_DescribeResponse> {
        // Strangers see only the apps they may use.
        let anonymous = caller(connection) == .anonymous
        return connection.eventLoop.makeSucceededFuture(.with {
            $0.requestID = request.requestID
            $0.device = Baton_V1_Device(agent.configuration.device)
            $0.apps = agent.configuration.apps.filter { !anonymous || $0.info.anonymous }.map { Baton_V1_App($0.info) }
        })
    }

    func connection(_ connection: PeerConnection, launch request: Baton_V1_LaunchRequest) -> EventLoopFuture<Baton_V1_LaunchResponse> {
        let id = request.requestID
        let data: ValueDictionary
        do {
            data = try ValueDictionary(wire: request.data, path: "data")
        } catch {
            return connection.eventLoop.makeSucceededFuture(.with {
                $0.requestID = id
                $0.status = .unknown
                $0.detail = "bad launch data: \(error)"
            })
        }
        let launch = LaunchRequest(
            uri: request.uri, appID: request.appID.isEmpty ? nil : request.appID,
            fallbackURI: request.fallbackUri.isEmpty ? nil : request.fallbackUri,
            preferredAppIDs: request.preferredAppIds, data: data)
        return agent.launch(launch, from: caller(connection)).map { status, detail in
            .with {
                $0.requestID = id
                $0.status = Baton_V1_LaunchStatus(status)
                $0.detail = detail
            }
        }
    }

    func connection(_ connection: PeerConnection, open request: Baton_V1_OpenServiceRequest) -> EventLoopFuture<Baton_V1_OpenServiceResponse> {
        let (status, detail) = agent.openStatus(app: request.appID, service: request.serviceName, from: caller(connection))
        if status == .success {
            let conn = agent.makeChannelObject(for: self, channel: request.channelID, app: request.appID, service: request.serviceName)
            channels[request.channelID] = ServiceChannel(
                app: request.appID, service: request.serviceName, conn: conn,
                provider: agent.configuration.app(request.appID)?.services[request.serviceName],
                taskName: agent.sharedProviderTaskName(app: request.appID, service: request.serviceName))
        }
        return connection.eventLoop.makeSucceededFuture(.with {
            $0.requestID = request.requestID
            $0.status = Baton_V1_OpenStatus(status)
            $0.detail = detail
        })
    }

    func connection(_ connection: PeerConnection, join request: Baton_V1_JoinRequest) -> EventLoopFuture<Baton_V1_JoinResponse> {
        connection.eventLoop.makeSucceededFuture(
            agent.enrol(request, caller: connection.peerIdentity, from: connection.remoteAddress?.description ?? "?"))
    }

    func connection(_ connection: PeerConnection, request: ServiceRequestFrame, responder: ServiceResponder) {
        guard let channel = channels[request.channelID] else {
            return responder.respond(.appServiceConnectionClosed)
        }
        if !request.message.hasCheckedFields, case .failure(let error) = request.message.values {
            return responder.respond(.failure, detail: "bad message: \(error)")
        }
        agent.serve(channel: channel, message: request.message, responder: responder)
    }

    func connection(_ connection: PeerConnection, channelClosed channelID: UInt64, status: Baton_V1_ClosedStatus) {
        guard let channel = channels.removeValue(forKey: channelID) else { return }
        agent.channelClosed(channel.conn, status: ClosedStatus(wire: status))
    }

    func connectionClosed(_ connection: PeerConnection, reason: String) {
        agent.connectionClosed(number)
    }
}
