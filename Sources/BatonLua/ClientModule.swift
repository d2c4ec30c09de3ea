import BatonClient
import BatonCore
import BatonNet
import CLuaShim
import NIOCore

/// Reaching devices: `baton.launch`, `baton.find`, `baton.appservice.open` and
/// `baton.appservice.send`, the device table's `dev:apps()`, and the script's `conn` objects.
/// Owns the channels the script opened (each keeps the run alive until it closes; a task's
/// close when it is cancelled). Shares the client and directory with ``DiscoveryModule``
/// through a ``DeviceAccess``.
///
/// What a request returns, in every function here: on success its result and `success`; on
/// failure, nil (where there is a result), the Rome status, why in words (for people, never
/// to parse: the provider's own error message when its handler raised one) and, last, the
/// cause (`timed_out`, `unreachable`, `denied`, `refused`, `unavailable`, ...: a
/// ``FailureCause``). `baton.check(status, detail, cause)` raises the class the cause maps
/// to, the same class and exit code the commands end with for that failure.
public final class ClientModule: LuaModule, @unchecked Sendable {
    /// The client and directory it reaches devices through.
    public let access: DeviceAccess
    private var channels: ChannelObjects?
    /// The handoffs going on, so that a cancelled task's roll back.
    let handoffs = RunningHandoffs()

    /// A module reaching devices through `access` (share it with the run's ``DiscoveryModule``).
    public init(access: DeviceAccess) {
        self.access = access
    }

    /// Adds `launch`, `find`, `appservice` and the device table's `apps` method.
    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        access.attach(to: runtime)
        let lua = runtime.state
        channels = ChannelObjects(runtime: runtime, keepsRunAlive: true)
        runtime.register("launch", in: m, qualifier: "baton") { [self] call in try launch(call) }
        runtime.register("find", in: m, qualifier: "baton") { [self] call in try find(call) }
        runtime.register("handoff", in: m, qualifier: "baton") { [self] call in try handoff(call) }

        lua.newTable()
        runtime.register("open", in: -1, qualifier: "baton.appservice") { [self] call in try openService(call) }
        runtime.register("send", in: -1, qualifier: "baton.appservice") { [self] call in try sendOnce(call) }
        lua.rawSet(m, field: "appservice")

        LuaDevice.pushMetatable(runtime)
        lua.newTable()
        runtime.register("apps", in: -1, qualifier: "device") { [self] call in try apps(call) }
        lua.rawSet(-2, field: "__index")
        lua.pop()
    }

    /// Stops the directory the run started.
    public func runFinished(_ runtime: LuaRuntime) {
        access.stop()
    }

    /// Closes the channels `task` opened and cancels its handoffs.
    public func taskCancelled(_ task: LuaTaskID, in runtime: LuaRuntime) {
        channels?.closeAll(ownedBy: task)
        handoffs.cancel(ownedBy: task)
    }

    // MARK: devices

    /// The device argument, as a target: a device table (a handle: by its `id`, at every
    /// route the directory knows now, else the routes it had when pushed; only a table this
    /// run did not push, a saved one, is dialled at its `addresses`/`address` strings, where
    /// the id must still answer), a name or an id the directory knows, or `"host:port"` (any
    /// device of this account there).
    func deviceTarget(_ call: HostCall, _ position: Int32) throws -> DeviceTarget {
        let lua = call.lua
        if lua.type(at: position) == .table {
            let table = OptionTable(call, at: position, function: call.name)
            let id = (try? table.string("id")) ?? nil
            let addresses = (try? table.stringOrStrings("addresses")) ?? nil
            let address = (try? table.string("address")) ?? nil
            let routes = (addresses ?? address.map { [$0] } ?? []).compactMap { DeviceAddress($0) }.map(DeviceRoute.tcp)
            let account = ((try? table.string("account")) ?? nil) ?? ""
            let target = access.target(id: id, routes: routes, account: account)
            guard !target.routes.isEmpty else {
                throw call.argumentError(position, "device table without an address (find it with baton.find)")
            }
            return target
        }
        guard let text = lua.toString(at: position) else {
            throw call.argumentError(position, "device expected (a device from baton.find, a name, an id, or \"host:port\"), got \(lua.typeName(at: position))")
        }
        if let address = DeviceAddress(text) { return DeviceTarget(address) }
        if let known = access.knownDevice(text) { return known }
        // An unknown device, as for every command: not_found (68), not a script error.
        throw HostError.caused(
            .notFound,
            "\(call.name): no single known device is named or has the id \"\(text)\"; find it first with baton.find, or give host:port")
    }

    /// The `timeout` option of a request (seconds), or nil for the client's default (30 s).
    static func requestTimeout(_ options: OptionTable) throws -> TimeAmount? {
        guard let seconds = try options.number("timeout") else { return nil }
        guard seconds > 0, seconds <= 86_400 else {
            throw HostError.message("\(options.function): timeout must be a number of seconds above 0 and at most 86400, got \(seconds)")
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// `baton.find(x [, {timeout =, required =}])`: `"host:port"` asks that agent; a name (any
    /// case) or an id is looked for where the device was last reached and in the directory
    /// (mDNS and `--peer` devices) until found or the timeout: `nil, "not_found", detail,
    /// cause` for a name nobody knows (the detail suggests the closest known names), `nil,
    /// "ambiguous", detail, cause` when several devices share the name, `nil,
    /// "remote_system_unavailable", detail, "not_answering"` for a known device (enrolled, met or
    /// reached before) that answers nowhere; an address that does not answer as an agent of
    /// this account, `nil`, its status (`remote_system_unavailable`, `denied_by_local_system`),
    /// why and its cause. With `required = true` those raise an error of the cause's class
    /// instead: `not_found` (68), `unavailable` (69), `denied` (77), `timeout` (3).
    private func find(_ call: HostCall) throws -> HostResult {
        let target = try call.string(1)
        let runtime = call.runtime
        let timeout = try DiscoveryModule.timeout(call, 2, allowing: ["required"])
        let required = call.lua.type(at: 2) == .table ? try OptionTable(call, at: 2, function: call.name).bool("required") ?? false : false
        guard let address = DeviceAddress(target) else {
            let found = try access.directory.find(target, timeout: timeout).flatMapThrowing { result in
                guard required, let failure = result.failure(for: target) else { return result }
                throw HostError.caused(failure.cause, failure.message)
            }
            return try runtime.wait(call, for: found) { result, lua in
                guard case .found(let device) = result else {
                    let failure = result.failure(for: target) ?? .notFound(target, suggestions: [])
                    lua.pushNil()
                    lua.push(failure.status)
                    lua.push(failure.message)
                    lua.push(failure.cause.rawValue)
                    return 4
                }
                LuaDevice.push(device, access: self.access, on: lua, runtime: runtime)
                return 1
            }
        }
        let found = try access.client.describe(DeviceTarget(address), timeout: timeout)
            .map { Result<DeviceInfo, BatonClientError>.success($0.0) }
            .flatMapErrorThrowing { error in
                // An address that does not answer is a device unreachable, not one unknown; one
                // of another account is denied: the class is the cause's, as for every command.
                let failure = error as? BatonClientError ?? .unreachable(ErrorWords.of(error))
                guard required else { return .failure(failure) }
                throw HostError.caused(failure.cause, "no agent of this account answers at \(target): \(failure)")
            }
        return try runtime.wait(call, for: found) { result, lua in
            switch result {
            case .success(let device):
                LuaDevice.push(device, address: address, access: self.access, on: lua, runtime: runtime)
                return 1
            case .failure(let failure):
                lua.pushNil()
                lua.push(BatonClient.launchStatus(failure.cause).rawValue)
                lua.push(failure.detail)
                lua.push(failure.cause.rawValue)
                return 4
            }
        }
    }

    /// `dev:apps([{timeout =}])`: the device's apps, asked of its agent.
    private func apps(_ call: HostCall) throws -> HostResult {
        let device = try deviceTarget(call, 1)
        let runtime = call.runtime
        var timeout: TimeAmount? = nil
        if call.lua.type(at: 2) == .table {
            let options = OptionTable(call, at: 2, function: "dev:apps")
            try options.check(allowed: ["timeout"])
            timeout = try Self.requestTimeout(options)
        }
        let described = try access.client.describe(device, timeout: timeout).map { Result<[AppInfo], BatonClientError>.success($0.1) }
            .recover { error in .failure(error as? BatonClientError ?? .unreachable("\(error)")) }
        return try runtime.wait(call, for: described) { result, lua in
            let apps: [AppInfo]
            switch result {
            case .success(let found): apps = found
            case .failure(let error):
                lua.pushNil()
                lua.push(BatonClient.launchStatus(error.cause).rawValue)
                lua.push(error.detail)
                lua.push(error.cause.rawValue)
                return 4
            }
            lua.newTable(arrayCount: Int32(apps.count))
            for (i, app) in apps.enumerated() {
                let services: [Value] = app.services.map { .string($0) }
                let schemes: [Value] = app.schemes.map { .string($0) }
                runtime.push(.dictionary([
                    "id": .string(app.id), "name": .string(app.name), "schemes": .array(schemes),
                    "services": .array(services), "attributes": .dictionary(app.attributes), "anonymous": .bool(app.anonymous),
                ]), on: lua)
                lua.rawSet(-2, index: i + 1)
            }
            return 1
        }
    }

    // MARK: launching

    /// `baton.launch(device, uri [, {app=, fallback=, prefer={}, data={}, timeout=}])` →
    /// status, detail, and when it failed its cause (`timed_out`, `denied`, ...: see
    /// ``FailureCause``), which `baton.check` takes as its third argument.
    private func launch(_ call: HostCall) throws -> HostResult {
        let device = try deviceTarget(call, 1)
        var request = LaunchRequest(uri: try call.string(2))
        var timeout: TimeAmount? = nil
        let lua = call.lua
        if lua.type(at: 3) == .table {
            let options = OptionTable(call, at: 3, function: "baton.launch")
            try options.check(allowed: ["app", "fallback", "prefer", "data", "timeout"])
            request.appID = try options.string("app")
            request.fallbackURI = try options.string("fallback")
            request.preferredAppIDs = try options.strings("prefer") ?? []
            request.data = try options.message("data") ?? [:]
            timeout = try Self.requestTimeout(options)
        } else if !call.isNoneOrNil(3) {
            throw call.argumentError(3, "options table expected, got \(lua.typeName(at: 3))")
        }
        return try call.runtime.wait(call, for: access.client.launchOutcome(request, on: device, timeout: timeout)) { outcome, lua in
            lua.push(outcome.status.rawValue)
            lua.push(outcome.detail)
            guard let cause = outcome.cause else { return 2 }
            lua.push(cause.rawValue)
            return 3
        }
    }

    // MARK: app services

    /// `baton.appservice.open(device, service, {package = app, timeout =})` → conn, status; or
    /// nil, status, detail, cause.
    private func openService(_ call: HostCall) throws -> HostResult {
        let device = try deviceTarget(call, 1)
        let service = try call.string(2)
        let (app, timeout) = try packageOption(call, 3)
        let owner = call.runtime.currentTaskID
        return try call.runtime.wait(call, for: access.client.openServiceOutcome(service, app: app, on: device, timeout: timeout)) { [self] result, lua in
            let (channel, outcome) = result
            guard let channel else {
                lua.pushNil()
                lua.push(outcome.status.rawValue)
                lua.push(outcome.detail)
                guard let cause = outcome.cause else { return 3 }
                lua.push(cause.rawValue)
                return 4
            }
            pushConnection(channel, owner: owner, on: lua, runtime: call.runtime)
            lua.push(outcome.status.rawValue)
            return 2
        }
    }

    /// `baton.appservice.send(device, service, msg, {package = app, timeout =})` → reply,
    /// status, detail: the reply message and `success`; or nil, the status, why in words (the
    /// provider's own error message when its handler raised one, "the channel did not open:
    /// app_not_installed: ..." when the channel did not open) and the cause (see
    /// ``LuaRuntime/pushReply(_:on:)``).
    private func sendOnce(_ call: HostCall) throws -> HostResult {
        let device = try deviceTarget(call, 1)
        let service = try call.string(2)
        let message = try call.runtime.messageArgument(call, 3)
        let (app, timeout) = try packageOption(call, 4)
        let runtime = call.runtime
        return try runtime.wait(call, for: access.client.send(message, to: service, app: app, on: device, timeout: timeout)) { reply, lua in
            runtime.pushReply(reply, on: lua)
        }
    }

    /// The app (`package`) and `timeout` options.
    private func packageOption(_ call: HostCall, _ position: Int32) throws -> (String, TimeAmount?) {
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "options table with package = \"app.id\" expected, got \(call.lua.typeName(at: position))")
        }
        let options = OptionTable(call, at: position, function: call.name)
        try options.check(allowed: ["package", "app", "timeout"])
        guard let app = try options.string("package") ?? options.string("app") else {
            throw call.argumentError(position, "package = \"app.id\" is required")
        }
        return (app, try Self.requestTimeout(options))
    }

    /// The conn table (see ``ChannelObjects``): `conn.id`, `conn.app`, `conn.service`,
    /// `conn.device`. An open channel keeps the run alive; `owner`'s cancellation closes it.
    private func pushConnection(_ channel: AppServiceConnection, owner: LuaTaskID?, on lua: LuaState, runtime: LuaRuntime) {
        guard let channels else { return lua.pushNil() }
        let endpoint = ChannelObjects.Endpoint(send: { message, timeout in channel.send(message, timeout: timeout) }, close: { channel.close() })
        let conn = channels.make(endpoint, fields: [
            ("id", .int(Int64(bitPattern: channel.channelID))), ("app", .string(channel.app)),
            ("service", .string(channel.service)), ("device", .string(channel.device.description)),
        ], owner: owner)
        runtime.push(conn.object, on: lua)
        channel.onRequest = { message in channels.request(message, on: conn, service: channel.service) }
        channel.onClosed = { status in channels.closed(conn, status: status) }
    }
}
