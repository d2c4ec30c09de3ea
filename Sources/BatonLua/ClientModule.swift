import BatonClient
import BatonCore
import CLuaShim
import NIOCore

extension LuaRuntime {
    /// The client every script call shares: one connection per device, on this loop. Made on
    /// first use, with the connection security ``RuntimeOptions/security`` makes (loading this
    /// device's account); a failure there is the calling function's error.
    var client: BatonClient {
        get throws {
            if let existing = clientStorage { return existing }
            var options = BatonClient.Options()
            options.connectTimeout = TimeAmount(self.options.connectTimeout)
            do {
                options.security = try self.options.security()
            } catch {
                throw HostError.message("\(error)")
            }
            let client = BatonClient(eventLoop: eventLoop, options: options, logger: logger)
            clientStorage = client
            return client
        }
    }

    static let deviceMetatable = "baton.device"
    static let connMetatable = "baton.conn"

    /// `baton.launch`, `baton.appservice`, `baton.find` and the device and conn objects.
    func installClientFunctions(module m: Int32) {
        let lua = state
        register("launch", in: m, qualifier: "baton") { call in try call.runtime.launch(call) }
        register("find", in: m, qualifier: "baton") { call in try call.runtime.find(call) }

        lua.newTable()
        register("open", in: -1, qualifier: "baton.appservice") { call in try call.runtime.openService(call) }
        register("send", in: -1, qualifier: "baton.appservice") { call in try call.runtime.sendOnce(call) }
        lua.rawSet(m, field: "appservice")

        luaL_newmetatable(lua.pointer, Self.deviceMetatable)
        lua.newTable()
        register("apps", in: -1, qualifier: "device") { call in try call.runtime.apps(call) }
        lua.rawSet(-2, field: "__index")
        lua.pop()

        luaL_newmetatable(lua.pointer, Self.connMetatable)
        lua.newTable()
        register("send", in: -1, qualifier: "conn") { call in try call.runtime.connSend(call) }
        register("close", in: -1, qualifier: "conn") { call in try call.runtime.connClose(call) }
        lua.rawSet(-2, field: "__index")
        lua.pop()
    }

    // MARK: devices

    /// The device argument: a device table (its `address`) or `"host:port"`.
    func deviceAddress(_ call: HostCall, _ position: Int32) throws -> DeviceAddress {
        let lua = call.lua
        var text: String?
        if lua.type(at: position) == .table {
            lua.rawGet(position, field: "address")
            text = lua.toString(at: -1)
            lua.pop()
        } else {
            text = lua.toString(at: position)
        }
        guard let text else {
            throw call.argumentError(position, "device expected (a device from baton.find, a name, an id, or \"host:port\"), got \(lua.typeName(at: position))")
        }
        if let address = DeviceAddress(text) { return address }
        if let known = knownDevice(text) { return known }
        throw call.argumentError(position, "no single known device is named or has the id \"\(text)\"; find it first with baton.find, or give host:port")
    }

    /// Pushes a device table: id, name, kind, platform, model, manufacturer, address,
    /// transports, status; `dev:apps()`.
    func pushDevice(_ device: DeviceInfo, address: DeviceAddress, on lua: LuaState) {
        lua.newTable(recordCount: 10)
        for (key, value) in [("id", device.id), ("name", device.name), ("kind", device.kind.rawValue),
                             ("platform", device.platform.rawValue), ("model", device.model),
                             ("manufacturer", device.manufacturer), ("address", address.description),
                             ("status", "available")] {
            lua.push(value)
            lua.rawSet(-2, field: key)
        }
        push(Value.array([.string("local")]), on: lua)
        lua.rawSet(-2, field: "transports")
        lua.pushMetatable(named: Self.deviceMetatable)
        lua.setMetatable(-2)
    }

    /// `baton.find(x [, {timeout =}])`: `"host:port"` asks that agent; a name or an id is
    /// looked for in the directory (mDNS and `--peer` devices) until found or the timeout:
    /// `nil, "not_found"`, or `nil, "ambiguous", detail` when several devices share the name.
    private func find(_ call: HostCall) throws -> HostResult {
        let target = try call.string(1)
        guard let address = DeviceAddress(target) else {
            return try findInDirectory(call, target: target, timeout: discoveryTimeout(call, 2))
        }
        let found = try client.describe(address).map { Optional($0.0) }.recover { _ in nil }
        return try wait(call, for: found) { device, lua in
            guard let device else {
                lua.pushNil()
                lua.push("not_found")
                return 2
            }
            self.pushDevice(device, address: address, on: lua)
            return 1
        }
    }

    /// `dev:apps()`: the device's apps, asked of its agent.
    private func apps(_ call: HostCall) throws -> HostResult {
        let address = try deviceAddress(call, 1)
        let described = try client.describe(address).map { Optional($0.1) }.recover { _ in nil }
        return try wait(call, for: described) { apps, lua in
            guard let apps else {
                lua.pushNil()
                lua.push(LaunchStatus.remoteSystemUnavailable.rawValue)
                return 2
            }
            lua.newTable(arrayCount: Int32(apps.count))
            for (i, app) in apps.enumerated() {
                let services: [Value] = app.services.map { .string($0) }
                let schemes: [Value] = app.schemes.map { .string($0) }
                self.push(.dictionary([
                    "id": .string(app.id), "name": .string(app.name), "schemes": .array(schemes),
                    "services": .array(services), "attributes": .dictionary(app.attributes), "anonymous": .bool(app.anonymous),
                ]), on: lua)
                lua.rawSet(-2, index: i + 1)
            }
            return 1
        }
    }

    // MARK: launching

    /// `baton.launch(device, uri [, {app=, fallback=, prefer={}, data={}}])` → status, detail.
    private func launch(_ call: HostCall) throws -> HostResult {
        let address = try deviceAddress(call, 1)
        var request = LaunchRequest(uri: try call.string(2))
        let lua = call.lua
        if lua.type(at: 3) == .table {
            let options = OptionsTable(call: call, position: 3, function: "baton.launch")
            try options.check(allowed: ["app", "fallback", "prefer", "data", "timeout"])
            request.appID = try options.string("app")
            request.fallbackURI = try options.string("fallback")
            request.preferredAppIDs = try options.strings("prefer") ?? []
            request.data = try options.message("data") ?? [:]
        } else if !call.isNoneOrNil(3) {
            throw call.argumentError(3, "options table expected, got \(lua.typeName(at: 3))")
        }
        return try wait(call, for: client.launch(request, on: address)) { result, lua in
            lua.push(result.0.rawValue)
            lua.push(result.1)
            return 2
        }
    }

    // MARK: app services

    /// `baton.appservice.open(device, service, {package = app})` → conn, status.
    private func openService(_ call: HostCall) throws -> HostResult {
        let address = try deviceAddress(call, 1)
        let service = try call.string(2)
        let app = try packageOption(call, 3)
        return try wait(call, for: client.openService(service, app: app, on: address)) { [self] result, lua in
            let (channel, status, detail) = result
            guard let channel else {
                lua.pushNil()
                lua.push(status.rawValue)
                lua.push(detail)
                return 3
            }
            pushConnection(channel, on: lua)
            lua.push(status.rawValue)
            return 2
        }
    }

    /// `baton.appservice.send(device, service, msg, {package = app})` → reply, status.
    private func sendOnce(_ call: HostCall) throws -> HostResult {
        let address = try deviceAddress(call, 1)
        let service = try call.string(2)
        let message = try messageArgument(call, 3)
        let app = try packageOption(call, 4)
        return try wait(call, for: client.send(message, to: service, app: app, on: address)) { [self] reply, lua in
            pushReply(reply, on: lua)
        }
    }

    private func packageOption(_ call: HostCall, _ position: Int32) throws -> String {
        let options = OptionsTable(call: call, position: position, function: call.name)
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "options table with package = \"app.id\" expected, got \(call.lua.typeName(at: position))")
        }
        try options.check(allowed: ["package", "app"])
        guard let app = try options.string("package") ?? options.string("app") else {
            throw call.argumentError(position, "package = \"app.id\" is required")
        }
        return app
    }

    /// The conn table: `conn.id`, `conn.app`, `conn.service`, `conn.device`; `conn:send(msg)`,
    /// `conn:close()`; the script sets `conn.on_request(msg)` and `conn.on_closed(status)`.
    /// An open channel keeps the run alive.
    private func pushConnection(_ channel: AppServiceConnection, on lua: LuaState) {
        let number = nextChannelNumber
        nextChannelNumber += 1
        lua.newTable(recordCount: 6)
        lua.push(Int64(bitPattern: channel.channelID))
        lua.rawSet(-2, field: "id")
        lua.push(channel.app)
        lua.rawSet(-2, field: "app")
        lua.push(channel.service)
        lua.rawSet(-2, field: "service")
        lua.push(channel.device.description)
        lua.rawSet(-2, field: "device")
        lua.push(number)
        lua.rawSet(-2, field: "_channel")
        lua.pushMetatable(named: Self.connMetatable)
        lua.setMetatable(-2)
        let object = reference(at: -1, on: lua)
        openChannels[number] = (channel, object)
        retainKeepAlive()
        channel.onRequest = { [self] message in
            let promise = eventLoop.makePromise(of: ServiceReplyMessage.self)
            let started = startCallback("on_request", of: object, name: "on_request of \(channel.service)", arguments: { lua in
                self.push(.dictionary(message), on: lua)
                return 1
            }) { result in
                promise.succeed(self.serviceReply(from: result, handler: "on_request"))
            }
            if !started { promise.succeed(ServiceReplyMessage(status: .failure, detail: "the script set no on_request")) }
            return promise.futureResult
        }
        channel.onClosed = { [self] status in
            startCallback("on_closed", of: object, name: "on_closed of \(channel.service)") { lua in
                lua.push(status.rawValue)
                return 1
            }
            if openChannels.removeValue(forKey: number) != nil {
                release(object)
                releaseKeepAlive()
            }
        }
    }

    private func channel(_ call: HostCall) throws -> AppServiceConnection? {
        let lua = call.lua
        guard lua.type(at: 1) == .table else { throw call.argumentError(1, "conn expected (call it as conn:send(msg))") }
        lua.rawGet(1, field: "_channel")
        defer { lua.pop() }
        guard let number = lua.toInteger(at: -1) else { throw call.argumentError(1, "conn expected") }
        return openChannels[Int(number)]?.channel
    }

    /// `conn:send(msg)` → reply, status.
    private func connSend(_ call: HostCall) throws -> HostResult {
        let message = try messageArgument(call, 2)
        guard let channel = try channel(call) else {
            call.lua.pushNil()
            call.lua.push(ResponseStatus.appServiceConnectionClosed.rawValue)
            return .values(2)
        }
        return try wait(call, for: channel.send(message)) { [self] reply, lua in pushReply(reply, on: lua) }
    }

    /// `conn:close()`.
    private func connClose(_ call: HostCall) throws -> HostResult {
        try channel(call)?.close()
        return .values(0)
    }
}

/// An options table argument, read field by field.
struct OptionsTable {
    let call: HostCall
    let position: Int32
    let function: String

    func check(allowed: Set<String>) throws {
        let lua = call.lua
        guard lua.type(at: position) == .table else { return }
        lua.pushNil()
        while lua.next(position) {
            let key = lua.toString(at: -2)
            lua.pop()
            guard let key, allowed.contains(key) else {
                lua.pop()
                throw HostError.message("\(function): unknown option \(key.map { "'\($0)'" } ?? "key") (options: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
    }

    private func field<T>(_ name: String, _ read: (LuaState.LuaType) throws -> T?) throws -> T? {
        let lua = call.lua
        guard lua.type(at: position) == .table else { return nil }
        let type = lua.rawGet(position, field: name)
        defer { lua.pop() }
        return type == .nil ? nil : try read(type)
    }

    func string(_ name: String) throws -> String? {
        try field(name) { type in
            guard let s = call.lua.toString(at: -1) else {
                throw HostError.message("\(function): \(name) must be a string, got \(call.lua.typeName(at: -1))")
            }
            return s
        }
    }

    func strings(_ name: String) throws -> [String]? {
        try field(name) { type in
            let lua = call.lua
            guard type == .table else { throw HostError.message("\(function): \(name) must be a list of strings") }
            let t = lua.top
            return try (0..<lua.rawLength(at: t)).map { i in
                lua.rawGet(t, index: i + 1)
                defer { lua.pop() }
                guard let s = lua.toString(at: -1) else { throw HostError.message("\(function): \(name)[\(i + 1)] must be a string") }
                return s
            }
        }
    }

    func message(_ name: String) throws -> ValueDictionary? {
        try field(name) { type in
            guard type == .table else { throw HostError.message("\(function): \(name) must be a table") }
            let value: Value
            do { value = try call.runtime.value(at: -1, on: call.lua, root: name) } catch { throw HostError.message("\(error)") }
            guard case .dictionary(let d) = value else { throw HostError.message("\(function): \(name) must have string keys") }
            return d
        }
    }
}
