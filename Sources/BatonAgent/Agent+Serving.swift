import BatonClient
import BatonCore
import BatonLua
import BatonNet
import BatonWire
import Logging
import NIOCore

extension Agent {
    /// Starts listening on `host:port` (0 picks a free port) on the agent's own loop.
    /// With `.tls`, callers of this account are served in full, others (`anonymous`) only by
    /// apps marked anonymous, and devices may join with invite codes; `.insecure` listens on
    /// loopback addresses only.
    public func listen(
        host: String, port: Int, security: ConnectionSecurity, limits: FrameLimits = FrameLimits(),
        timing: PeerConnection.Timing = PeerConnection.Timing()
    ) -> EventLoopFuture<AgentServer> {
        let loop = runtime.eventLoop
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

    /// The `conn` table a provider receives (see ``ChannelObjects``): `conn.id`, `conn.app`,
    /// `conn.service`, `conn:send(msg)` (a request to the client, answered by its `on_request`),
    /// `conn:close()`, and `conn.on_closed = function(status)` set by the script.
    func makeChannelObject(for handler: AgentConnection, channel id: UInt64, app: String, service: String) -> ChannelObjects.Channel {
        let objects = channelObjects
        let loop = runtime.eventLoop
        let endpoint = ChannelObjects.Endpoint(send: { [weak handler] message, timeout in
            guard let handler, let connection = handler.connection, connection.isOpen, handler.channels[id] != nil else { return nil }
            let reply = loop.makePromise(of: ServiceReply.self)
            let deadline = timeout.map { loop.now + $0 }
            connection.send(channel: id, message: ServiceMessage(message), deadline: deadline, completion: reply.succeed)
            return reply.futureResult
        }, close: { [weak handler] in
            // The provider closed it: the client hears completed; on_closed does not run.
            guard let handler, let state = handler.channels.removeValue(forKey: id) else { return }
            handler.connection?.close(channel: id, status: .completed)
            objects.forget(state.conn)
        })
        return objects.make(endpoint, fields: [
            ("id", .int(Int64(bitPattern: id))), ("app", .string(app)), ("service", .string(service)),
        ], owner: nil)
    }

    /// Calls the channel's `on_closed(status)`, if the script set one, and lets it go.
    func channelClosed(_ conn: ChannelObjects.Channel, status: ClosedStatus) {
        channelObjects.closed(conn, status: status)
    }

    func connectionClosed(_ number: Int) {
        connections[number] = nil
    }
}
