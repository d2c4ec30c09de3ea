import BatonCore
import BatonLua
import BatonNet
import BatonWire
import Logging
import NIOCore
import NIOPosix

/// Serves one client connection from the agent: handshake, describe, launch, joins, and the
/// app-service channels the client opens on it.
final class AgentConnection: PeerConnectionDelegate, @unchecked Sendable {
    let agent: Agent
    /// The agent's number for this connection.
    let number: Int
    /// Strong, never weak, and let go when the connection closes: a weak reference gives a
    /// connection a side table, and each of its retains (several per request) the slow path.
    private(set) var connection: PeerConnection?
    /// Channel id → the channel's app, service and Lua object.
    var channels: [UInt64: ServiceChannel] = [:]
    /// The agent's logger, with the caller's address (`peer`) and trace id once its Hello came.
    private(set) var logger: Logger
    /// How the `conn` objects of its channels reach it until it closes: a weak reference would
    /// give it a side table, and every retain of it (several per request) the slow path.
    let handle = Handle()

    /// Holds the connection until it closes; touched on the serving loop only.
    final class Handle: @unchecked Sendable {
        var connection: AgentConnection?
    }

    init(agent: Agent, number: Int, connection: PeerConnection) {
        self.agent = agent
        self.number = number
        self.connection = connection
        self.logger = agent.logger
        handle.connection = self
    }

    /// Who the caller proved to be in the TLS handshake; a connection without one is served as
    /// a stranger.
    private func caller(_ connection: PeerConnection) -> AuthorizationKind {
        connection.peerIdentity?.authorization ?? .anonymous
    }

    func connection(_ connection: PeerConnection, hello: Hello) -> DeviceInfo? {
        if let trace = TraceContext.parse(hello.traceparent) { logger[metadataKey: "trace_id"] = "\(trace.traceID)" }
        // What is served says how the caller came: an address (TCP), or `broker:DEVICE`.
        logger[metadataKey: "peer"] = "\(connection.remoteDescription)"
        logger.debug("client connected", metadata: [
            "peer": "\(connection.remoteDescription)", "client": "\(hello.deviceName)",
            "authorization": "\(caller(connection).rawValue)",
        ])
        return agent.configuration.device
    }

    func connectionDescribe(_ connection: PeerConnection, context: RequestContext) -> EventLoopFuture<DeviceDescription> {
        // Strangers see only the apps they may use.
        let anonymous = caller(connection) == .anonymous
        let apps = agent.configuration.apps.filter { !anonymous || $0.info.anonymous }.map(\.info)
        return connection.eventLoop.makeSucceededFuture(DeviceDescription(device: agent.configuration.device, apps: apps))
    }

    func connection(_ connection: PeerConnection, launch request: LaunchRequest, context: RequestContext) -> EventLoopFuture<(LaunchStatus, String)> {
        let caller = caller(connection)
        let launched = agent.launch(request, from: caller, context: context, logger: logger)
        guard caller == .anonymous else { return launched }
        return launched.hop(to: connection.eventLoop).map { [weak connection] result in
            if result.0 == .deniedByRemoteSystem { connection?.noteRefusedLaunch("\(request.uri): \(result.1)") }
            return result
        }
    }

    func connection(
        _ connection: PeerConnection, open service: String, app: String, channelID: UInt64, context: RequestContext
    ) -> EventLoopFuture<OpenAnswer> {
        let (status, detail) = agent.openStatus(app: app, service: service, from: caller(connection))
        guard status == .success else { return connection.eventLoop.makeSucceededFuture(.refused(status, detail)) }
        let luaLoop = agent.runtime.eventLoop
        guard luaLoop.inEventLoop else {
            // The conn object is a Lua table: made where Lua runs.
            return luaLoop.submit { [self] in
                (agent.makeChannelObject(for: self, channel: channelID, app: app, service: service),
                 agent.sharedProviderTaskName(app: app, service: service))
            }.hop(to: connection.eventLoop).map { [self] conn, taskName in
                .success(install(channelID, app: app, service: service, conn: conn, taskName: taskName))
            }
        }
        let conn = agent.makeChannelObject(for: self, channel: channelID, app: app, service: service)
        let taskName = agent.sharedProviderTaskName(app: app, service: service)
        return connection.eventLoop.makeSucceededFuture(.success(install(channelID, app: app, service: service, conn: conn, taskName: taskName)))
    }

    /// Keeps the channel just opened; call on the connection's loop.
    private func install(_ channelID: UInt64, app: String, service: String, conn: ChannelObjects.Channel, taskName: String) -> ServiceChannel {
        let channel = ServiceChannel(
            connection: self, app: app, service: service, conn: conn,
            provider: agent.configuration.app(app)?.services[service],
            native: agent.nativeServices[Agent.ProviderKey(app: app, service: service)].map { ($0, agent.nativeChannel(for: self, channel: channelID)) },
            taskName: taskName)
        channels[channelID] = channel
        return channel
    }

    func connection(_ connection: PeerConnection, join request: JoinRequest, context: RequestContext) -> EventLoopFuture<JoinAnswer> {
        agent.join(request, on: connection)
    }

    func connectionClosed(_ connection: PeerConnection, reason: String) {
        self.connection = nil
        handle.connection = nil
        agent.connectionClosed(number)
    }


    /// One open channel: its app, service, provider and the `conn` table providers receive.
    final class ServiceChannel: ServiceChannelHandler, @unchecked Sendable {
        unowned let connection: AgentConnection
        let app: String
        let service: String
        /// The `conn` table providers receive.
        let conn: ChannelObjects.Channel
        /// The provider and how reports name its tasks, looked up once, not per request (the
        /// configured apps do not change once the agent runs).
        let provider: LuaReference?
        /// The service and this channel as it sees it, when the agent answers it itself (an
        /// app's `baton.playback`).
        let native: (service: any NativeService, channel: NativeChannel)?
        let taskName: String

        init(
            connection: AgentConnection, app: String, service: String, conn: ChannelObjects.Channel, provider: LuaReference?,
            native: (service: any NativeService, channel: NativeChannel)?, taskName: String
        ) {
            self.native = native
            self.connection = connection
            self.app = app
            self.service = service
            self.conn = conn
            self.provider = provider
            self.taskName = taskName
        }

        func channel(_ channelID: UInt64, of peer: PeerConnection, request message: ServiceMessage, responder: ServiceResponder) {
            if !message.isChecked, case .failure(let error) = message.values {
                return responder.respond(ServiceReply(status: error.isOverLimit ? .resourceLimitsExceeded : .failure, detail: "bad message: \(error)"))
            }
            if let native {
                guard case .success(let values) = message.values else {
                    return responder.respond(ServiceReply(status: .failure, detail: "bad message"))
                }
                // Served on the service's loop: at once when the connection is on it already.
                let service = native.service, loop = service.eventLoop
                let answer = loop.inEventLoop ? service.serve(values, from: native.channel) : loop.flatSubmit { service.serve(values, from: native.channel) }
                answer.hop(to: peer.eventLoop).whenSuccess { responder.respond($0) }
                return
            }
            connection.agent.serve(channel: self, message: message, responder: responder)
        }

        func channelClosed(_ channelID: UInt64, status: ClosedStatus) {
            guard connection.channels.removeValue(forKey: channelID) != nil else { return }
            if let native { native.service.eventLoop.execute { native.service.closed(native.channel) } }
            connection.agent.channelClosed(conn, status: status)
        }
    }
}
