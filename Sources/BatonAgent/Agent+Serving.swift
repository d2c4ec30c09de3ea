import BatonClient
import BatonCore
import BatonLua
import BatonNet
import BatonWire
import CLuaShim
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
            installChannelObjects()
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

    /// The `conn` table a provider receives: `conn.id`, `conn.app`, `conn.service`,
    /// `conn:send(msg)` (a request to the client, answered by its `on_request`), `conn:close()`,
    /// and `conn.on_closed = function(status)` set by the script.
    func makeChannelObject(connection: Int, channel: UInt64, app: String, service: String) -> LuaReference {
        let lua = runtime.state
        lua.newTable(recordCount: 5)
        lua.push(Int64(bitPattern: channel))
        lua.rawSet(-2, field: "id")
        lua.push(app)
        lua.rawSet(-2, field: "app")
        lua.push(service)
        lua.rawSet(-2, field: "service")
        lua.push(connection)
        lua.rawSet(-2, field: "_connection")
        lua.pushMetatable(named: Self.channelMetatable)
        lua.setMetatable(-2)
        let reference = runtime.reference(at: -1, on: lua)
        lua.pop()
        return reference
    }

    static let channelMetatable = "baton.agent.conn"

    private func installChannelObjects() {
        let lua = runtime.state
        guard luaL_newmetatable(lua.pointer, Self.channelMetatable) != 0 else {
            lua.pop()
            return
        }
        lua.newTable()
        runtime.register("send", in: -1, qualifier: "conn") { [self] call in
            let (connection, channel) = try channelOf(call)
            let message = try call.runtime.messageArgument(call, 2)
            let reply = call.runtime.eventLoop.makePromise(of: ServiceReply.self)
            connection.send(channel: channel, message: ServiceMessage(message), completion: reply.succeed)
            return try call.runtime.wait(call, for: reply.futureResult) { reply, lua in call.runtime.pushReply(reply, on: lua) }
        }
        runtime.register("close", in: -1, qualifier: "conn") { [self] call in
            let (connection, channel) = try channelOf(call)
            connection.close(channel: channel, status: .completed)
            connections.values.first { $0.connection === connection }?.forget(channel)
            return .values(0)
        }
        lua.rawSet(-2, field: "__index")
        lua.pop()
    }

    /// The connection and channel id of the `conn` table at argument 1.
    private func channelOf(_ call: HostCall) throws -> (PeerConnection, UInt64) {
        let lua = call.lua
        guard lua.type(at: 1) == .table else { throw call.argumentError(1, "conn expected (call it as conn:send(msg))") }
        lua.rawGet(1, field: "_connection")
        let number = lua.toInteger(at: -1).map(Int.init)
        lua.pop()
        lua.rawGet(1, field: "id")
        let id = lua.toInteger(at: -1).map { UInt64(bitPattern: $0) }
        lua.pop()
        guard let number, let id, let handler = connections[number], let connection = handler.connection,
              handler.channels[id] != nil, connection.isOpen
        else {
            throw HostError.message("the channel is closed")
        }
        return (connection, id)
    }

    /// Calls the channel's `on_closed(status)`, if the script set one, and lets it go.
    func channelClosed(object: LuaReference, status: ClosedStatus) {
        runtime.startCallback("on_closed", of: object, name: "on_closed") { lua in
            lua.push(status.rawValue)
            return 1
        }
        runtime.release(object)
    }

    func connectionClosed(_ number: Int) {
        connections[number] = nil
    }
}
