import BatonClient
import BatonCore
import BatonLua
import BatonNet
import BatonWire
import Logging
import NIOCore

extension Agent {
    /// Starts listening on `host:port` (0 picks a free port) on the agent's serving loop.
    /// With `.tls`, callers of this account are served in full, others (`anonymous`) only by
    /// apps marked anonymous, and devices may join with invite codes; `.insecure` listens on
    /// loopback addresses only.
    public func listen(
        host: String, port: Int, security: ConnectionSecurity, limits: FrameLimits = FrameLimits(),
        timing: PeerConnection.Timing = PeerConnection.Timing()
    ) -> EventLoopFuture<AgentServer> {
        let loop = servingLoop
        // Shared media is served on the host the agent listens on (its port is its own).
        runtime.eventLoop.execute { [media] in media.host = host }
        return loop.flatSubmit { [self] in
            trustStore = security.trustStore
            return AgentServer.bind(
                host: host, port: port, on: loop, security: security, limits: limits, timing: timing, logger: logger
            ) { [self] connection in
                let number = nextConnectionNumber
                nextConnectionNumber += 1
                let handler = AgentConnection(agent: self, number: number, connection: connection)
                connections[number] = handler
                return handler
            }
        }
    }

    /// Serves shared media (see `share` of `baton.playback`) on `port` instead of a free one.
    public func setMediaPort(_ port: Int) {
        runtime.eventLoop.execute { [media] in media.port = port }
    }

    /// The `conn` table a provider receives (see ``ChannelObjects``): `conn.id`, `conn.app`,
    /// `conn.service`, `conn:send(msg)` (a request to the client, answered by its `on_request`),
    /// `conn:close()`, and `conn.on_closed = function(status)` set by the script. Call on the
    /// runtime's loop; the endpoint's functions are called there, and act on the serving loop.
    func makeChannelObject(for handler: AgentConnection, channel id: UInt64, app: String, service: String) -> ChannelObjects.Channel {
        let objects = channelObjects
        let loop = servingLoop
        let luaLoop = runtime.eventLoop
        let handle = handler.handle
        let endpoint = ChannelObjects.Endpoint(send: { message, timeout in
            guard loop.inEventLoop else {
                // The channel may close on the way: the script hears it closed, as it would here.
                let closed = ServiceReply(status: .appServiceConnectionClosed, detail: "the channel is closed")
                return loop.flatSubmit {
                    guard let handler = handle.connection, let connection = handler.connection, connection.isOpen, handler.channels[id] != nil else {
                        return loop.makeSucceededFuture(closed)
                    }
                    let reply = loop.makePromise(of: ServiceReply.self)
                    connection.send(channel: id, message: ServiceMessage(message), deadline: timeout.map { loop.now + $0 }, completion: reply.succeed)
                    return reply.futureResult
                }.hop(to: luaLoop)
            }
            guard let handler = handle.connection, let connection = handler.connection, connection.isOpen, handler.channels[id] != nil else {
                return nil
            }
            let reply = loop.makePromise(of: ServiceReply.self)
            let deadline = timeout.map { loop.now + $0 }
            connection.send(channel: id, message: ServiceMessage(message), deadline: deadline, completion: reply.succeed)
            return reply.futureResult
        }, close: {
            // The provider closed it: the client hears completed; on_closed does not run.
            guard loop.inEventLoop else {
                return loop.execute {
                    guard let handler = handle.connection, let state = handler.channels.removeValue(forKey: id) else { return }
                    handler.connection?.close(channel: id, status: .completed)
                    luaLoop.execute { objects.forget(state.conn) }
                }
            }
            guard let handler = handle.connection, let state = handler.channels.removeValue(forKey: id) else { return }
            handler.connection?.close(channel: id, status: .completed)
            objects.forget(state.conn)
        })
        return objects.make(endpoint, fields: [
            ("id", .int(Int64(bitPattern: id))), ("app", .string(app)), ("service", .string(service)),
        ], owner: nil)
    }

    /// Calls the channel's `on_closed(status)`, if the script set one, and lets it go. Call on
    /// any loop.
    func channelClosed(_ conn: ChannelObjects.Channel, status: ClosedStatus) {
        guard runtime.eventLoop.inEventLoop else {
            return runtime.eventLoop.execute { [self] in channelObjects.closed(conn, status: status) }
        }
        channelObjects.closed(conn, status: status)
    }

    func connectionClosed(_ number: Int) {
        connections[number] = nil
    }
}
