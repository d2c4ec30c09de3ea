import BatonClient
import BatonCore
import CLuaShim
import NIOCore

/// The Lua `conn` objects of app-service channels, one implementation for both ends: the
/// script's (`baton.appservice.open`) and the agent's (the `conn` a provider receives).
///
/// A conn is a table with the channel's `id`, `app`, `service` (and whatever else its side
/// knows, such as `device`) and two methods: `conn:send(msg)` → reply, status, detail (a closed
/// channel answers `nil, "app_service_connection_closed"`), and `conn:close()`. The script may
/// set `conn.on_request = function(msg)` (answered like a provider) and
/// `conn.on_closed = function(status)`. What sending and closing do is each side's
/// ``Endpoint``. Confined to the runtime's event loop; one per side and runtime.
public final class ChannelObjects: @unchecked Sendable {
    /// What a conn's methods do on its side.
    public struct Endpoint {
        /// Sends a request on the channel, waiting the timeout given (nil: the connection's);
        /// the reply, or nil when the channel is closed.
        public var send: (ValueDictionary, TimeAmount?) -> EventLoopFuture<ServiceReply>?
        /// Closes the channel (`conn:close()`); closing twice does nothing.
        public var close: () -> Void

        /// An endpoint of these two functions.
        public init(send: @escaping (ValueDictionary, TimeAmount?) -> EventLoopFuture<ServiceReply>?, close: @escaping () -> Void) {
            self.send = send
            self.close = close
        }
    }

    /// A conn object: its number among this side's and its Lua table.
    public struct Channel: Sendable, Hashable {
        /// The number the table carries, to find its endpoint.
        public let number: Int
        /// The table.
        public let object: LuaReference
    }

    private struct Entry {
        let endpoint: Endpoint
        let object: LuaReference
        let owner: LuaTaskID?
        /// How reports name its callbacks' tasks: `on_closed of SERVICE`.
        let service: String
    }

    /// Weak: a channel may close (its connection ending) after the run, and the runtime, are gone.
    private weak var handle: LuaRuntime.Handle?
    private var runtime: LuaRuntime? { handle?.runtime }
    private let eventLoop: any EventLoop
    private let keepsRunAlive: Bool
    private var entries: [Int: Entry] = [:]
    private var nextNumber = 1
    /// Registry reference of the conn metatable.
    private var metatable: Int32 = 0

    /// Conn objects for one side of `runtime`: `keepsRunAlive` keeps the run going while one is
    /// open (a script's channel does; an agent's lives as long as its client). Makes the
    /// metatable; call on the loop.
    public init(runtime: LuaRuntime, keepsRunAlive: Bool) {
        self.handle = runtime.handle
        self.eventLoop = runtime.eventLoop
        self.keepsRunAlive = keepsRunAlive
        let lua = runtime.state
        lua.newTable()
        lua.push("baton.conn")
        lua.rawSet(-2, field: "__name")
        lua.newTable()
        runtime.register("send", in: -1, qualifier: "conn") { [unowned self] call in try send(call) }
        runtime.register("close", in: -1, qualifier: "conn") { [unowned self] call in
            try entry(call)?.endpoint.close()
            return .values(0)
        }
        lua.rawSet(-2, field: "__index")
        metatable = lua.ref()
    }

    /// Makes the conn table of a channel whose endpoint is `endpoint`, with `fields` (`id`,
    /// `app`, `service`, ...), owned by `owner` (closed if that task is cancelled).
    public func make(_ endpoint: Endpoint, fields: [(String, Value)], owner: LuaTaskID?) -> Channel {
        eventLoop.preconditionInEventLoop()
        let number = nextNumber
        nextNumber += 1
        // After the run the state is gone: an object no one can reach (its reference pushes nil).
        guard let runtime, !runtime.closed else { return Channel(number: number, object: LuaReference(ref: LUA_NOREF)) }
        let lua = runtime.state
        lua.newTable(recordCount: Int32(fields.count + 1))
        for (key, value) in fields {
            runtime.push(value, on: lua)
            lua.rawSet(-2, field: key)
        }
        lua.push(number)
        lua.rawSet(-2, field: "_channel")
        lua.pushRef(metatable)
        lua.setMetatable(-2)
        let object = runtime.reference(at: -1, on: lua)
        lua.pop()
        var service = "a channel"
        if let (_, value) = fields.first(where: { $0.0 == "service" }), case .string(let name) = value { service = name }
        entries[number] = Entry(endpoint: endpoint, object: object, owner: owner, service: service)
        if keepsRunAlive { runtime.retainKeepAlive() }
        return Channel(number: number, object: object)
    }

    /// Whether `channel` is still open on this side.
    public func isOpen(_ channel: Channel) -> Bool { entries[channel.number] != nil }

    /// The channel closed with `status`: runs the script's `on_closed(status)`, if it set one,
    /// and lets the object go. Does nothing for a channel already let go.
    public func closed(_ channel: Channel, status: ClosedStatus) {
        eventLoop.preconditionInEventLoop()
        guard let runtime, let entry = entries[channel.number] else { return }
        runtime.startCallback("on_closed", of: channel.object, name: "on_closed of \(entry.service)") { lua in
            lua.push(status.rawValue)
            return 1
        }
        forget(channel)
    }

    /// Lets the object go without a word to the script (the side closed it itself).
    public func forget(_ channel: Channel) {
        eventLoop.preconditionInEventLoop()
        guard let entry = entries.removeValue(forKey: channel.number), let runtime else { return }
        runtime.release(entry.object)
        if keepsRunAlive { runtime.releaseKeepAlive() }
    }

    /// Asks the script's `on_request(msg)` for the reply to a request that came on the
    /// channel: its results as a provider's are read (``LuaRuntime/serviceReply(from:handler:)``);
    /// `failure` if it set none.
    public func request(_ message: ValueDictionary, on channel: Channel, service: String) -> EventLoopFuture<ServiceReply> {
        eventLoop.preconditionInEventLoop()
        guard let runtime else {
            return eventLoop.makeSucceededFuture(ServiceReply(status: .failure, detail: "the script has ended"))
        }
        let promise = runtime.eventLoop.makePromise(of: ServiceReply.self)
        let started = runtime.startCallback("on_request", of: channel.object, name: "on_request of \(service)", arguments: { lua in
            runtime.push(.dictionary(message), on: lua)
            return 1
        }) { result in
            promise.succeed(runtime.serviceReply(from: result, handler: "on_request"))
        }
        if !started { promise.succeed(ServiceReply(status: .failure, detail: "the script set no on_request")) }
        return promise.futureResult
    }

    /// Closes every channel `task` opened, as `conn:close()` would.
    public func closeAll(ownedBy task: LuaTaskID) {
        eventLoop.preconditionInEventLoop()
        for entry in entries.values where entry.owner == task {
            entry.endpoint.close()
        }
    }

    /// Closes every channel, as `conn:close()` would.
    public func closeAll() {
        eventLoop.preconditionInEventLoop()
        for entry in entries.values { entry.endpoint.close() }
    }

    /// The entry of the conn table at argument 1; nil once its channel is closed.
    private func entry(_ call: HostCall) throws -> Entry? {
        let lua = call.lua
        lua.pushRef(metatable)
        let ours = lua.type(at: 1) == .table && lua.hasMetatable(at: 1, equalTo: -1)
        lua.pop()
        guard ours else {
            throw call.argumentError(1, "conn expected (call it as conn:\(call.name.split(separator: ".").last ?? "send")(...))")
        }
        lua.rawGet(1, field: "_channel")
        defer { lua.pop() }
        guard let number = lua.toInteger(at: -1) else { throw call.argumentError(1, "conn expected") }
        return entries[Int(number)]
    }

    /// `conn:send(msg)` → reply, status, detail.
    private func send(_ call: HostCall) throws -> HostResult {
        let message = try call.runtime.messageArgument(call, 2)
        var timeout: TimeAmount? = nil
        if call.lua.type(at: 3) == .table {
            let options = OptionTable(call, at: 3, function: "conn:send")
            try options.check(allowed: ["timeout"])
            timeout = try ClientModule.requestTimeout(options)
        } else if !call.isNoneOrNil(3) {
            throw call.argumentError(3, "options table expected ({timeout = 5}), got \(call.lua.typeName(at: 3))")
        }
        guard let reply = try entry(call)?.endpoint.send(message, timeout) else {
            call.lua.pushNil()
            call.lua.push(ResponseStatus.appServiceConnectionClosed.rawValue)
            call.lua.push("the channel is closed")
            return .values(3)
        }
        return try call.runtime.wait(call, for: reply) { reply, lua in call.runtime.pushReply(reply, on: lua) }
    }
}
