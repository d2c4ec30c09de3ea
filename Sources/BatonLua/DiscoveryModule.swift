import BatonClient
import BatonCore
import CLuaShim
import NIOCore

// baton.filter, baton.devices, baton.watch, and finding devices by name or id.
extension LuaRuntime {
    static let filterMetatable = "baton.filter"
    static let watcherMetatable = "baton.watcher"
    /// How long `find` and `devices` wait by default.
    static let defaultDiscoveryTimeout = TimeAmount.seconds(3)

    /// The shared directory, started (mDNS browsed, static peers polled) on first use.
    var directory: DeviceDirectory {
        get throws {
            if let existing = directoryStorage { return existing }
            let client = try client
            var discovery = options.discovery
            // `same_account` filters compare with this device's account.
            if let account = client.options.security.trustStore?.credentials.fingerprint.hex { discovery.account = account }
            let directory = DeviceDirectory(client: client, options: discovery, logger: logger)
            directoryStorage = directory
            directory.start()
            return directory
        }
    }

    func installDiscoveryFunctions(module m: Int32) {
        let lua = state
        register("filter", in: m, qualifier: "baton") { call in try call.runtime.makeFilter(call) }
        register("devices", in: m, qualifier: "baton") { call in try call.runtime.listDevices(call) }
        register("watch", in: m, qualifier: "baton") { call in try call.runtime.startWatch(call) }
        luaL_newmetatable(lua.pointer, Self.filterMetatable)
        lua.pop()
        luaL_newmetatable(lua.pointer, Self.watcherMetatable)
        lua.newTable()
        register("stop", in: -1, qualifier: "watcher") { call in try call.runtime.stopWatch(call) }
        lua.rawSet(-2, field: "__index")
        register("__close", in: -1, qualifier: "watcher") { call in try call.runtime.stopWatch(call) }
        lua.pop()
    }

    // MARK: filters

    /// The filter at `position`: a table of `kind`, `transport`, `status`, `platform`,
    /// `authorization` (kind and platform: a string or a list), or nil for the default.
    func filter(_ call: HostCall, _ position: Int32) throws -> DeviceFilter {
        var filter = DeviceFilter()
        if call.isNoneOrNil(position) { return filter }
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "filter table expected (baton.filter{kind = \"tv\"}), got \(call.lua.typeName(at: position))")
        }
        let options = OptionsTable(call: call, position: position, function: call.name)
        try options.check(allowed: ["kind", "transport", "status", "platform", "authorization"])
        func list(_ name: String) throws -> [String] {
            if let one = try? options.string(name) { return [one] }
            return try options.strings(name) ?? []
        }
        for kind in try list("kind") {
            guard let k = DeviceKind(rawValue: kind) else {
                throw HostError.message("\(call.name): unknown kind '\(kind)' (kinds: \(DeviceKind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            filter.kinds.insert(k)
        }
        for platform in try list("platform") {
            guard let p = Platform(rawValue: platform) else {
                throw HostError.message("\(call.name): unknown platform '\(platform)' (platforms: \(Platform.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            filter.platforms.insert(p)
        }
        switch try options.string("transport") {
        case nil, "any": filter.transport = nil
        case let t?:
            guard let value = Transport(rawValue: t) else { throw HostError.message("\(call.name): transport must be local, cloud or any, not '\(t)'") }
            filter.transport = value
        }
        switch try options.string("status") {
        case nil, "available": filter.status = .available
        case "any": filter.status = nil
        case let s?: throw HostError.message("\(call.name): status must be available or any, not '\(s)'")
        }
        if let kind = try options.string("authorization") {
            guard let value = AuthorizationKind(rawValue: kind) else {
                throw HostError.message("\(call.name): authorization must be same_account or anonymous, not '\(kind)'")
            }
            filter.authorization = value
        }
        return filter
    }

    /// `baton.filter{...}`: checks the table now (so mistakes show where they are made) and
    /// returns it, marked as a filter.
    private func makeFilter(_ call: HostCall) throws -> HostResult {
        _ = try filter(call, 1)
        call.lua.pushValue(at: 1)
        call.lua.pushMetatable(named: Self.filterMetatable)
        call.lua.setMetatable(-2)
        return .values(1)
    }

    /// The `timeout` of an options table at `position`, or the default.
    func discoveryTimeout(_ call: HostCall, _ position: Int32) throws -> TimeAmount {
        guard call.lua.type(at: position) == .table else {
            if call.isNoneOrNil(position) { return Self.defaultDiscoveryTimeout }
            throw call.argumentError(position, "options table expected ({timeout = 2}), got \(call.lua.typeName(at: position))")
        }
        let options = OptionsTable(call: call, position: position, function: call.name)
        try options.check(allowed: ["timeout"])
        call.lua.rawGet(position, field: "timeout")
        defer { call.lua.pop() }
        if call.lua.type(at: -1) == .nil { return Self.defaultDiscoveryTimeout }
        guard let seconds = call.lua.toNumber(at: -1), seconds >= 0, seconds <= 86_400 else {
            throw HostError.message("\(call.name): timeout must be a number of seconds between 0 and 86400")
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }

    // MARK: devices and find

    /// `baton.devices([filter], [{timeout =}])`: the devices known once enumeration is over
    /// (or the timeout passed), sorted by name.
    private func listDevices(_ call: HostCall) throws -> HostResult {
        let filter = try filter(call, 1)
        let timeout = try discoveryTimeout(call, 2)
        let directory = try self.directory
        let promise = eventLoop.makePromise(of: [RemoteDevice].self)
        var watch: DeviceDirectory.Watch?
        var finished = false
        let finish = {
            guard !finished else { return }
            finished = true
            if let watch { directory.unwatch(watch) }
            promise.succeed(directory.devices(matching: filter))
        }
        watch = directory.watch(filter) { event in
            if case .enumerationCompleted = event { finish() }
        }
        if directory.enumerated { finish() }
        let onTimeout = NIOLoopBound(finish, eventLoop: eventLoop)
        let timer = eventLoop.scheduleTask(in: timeout) { onTimeout.value() }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return try wait(call, for: promise.futureResult) { devices, lua in
            lua.newTable(arrayCount: Int32(devices.count))
            for (i, device) in devices.enumerated() {
                self.pushDevice(device, on: lua)
                lua.rawSet(-2, index: i + 1)
            }
            return 1
        }
    }

    /// `baton.find(name or id, {timeout =})` through the directory (see
    /// ``DeviceDirectory/find(_:timeout:)``).
    func findInDirectory(_ call: HostCall, target: String, timeout: TimeAmount) throws -> HostResult {
        return try wait(call, for: directory.find(target, timeout: timeout)) { result, lua in
            switch result {
            case .found(let device):
                self.pushDevice(device, on: lua)
                return 1
            case .notFound:
                lua.pushNil()
                lua.push("not_found")
                return 2
            case .ambiguous(let ids):
                lua.pushNil()
                lua.push("ambiguous")
                lua.push("\(ids.count) devices are named \"\(target)\": \(ids.joined(separator: ", ")); find one by id")
                return 3
            }
        }
    }

    /// The device `text` names among those already known (a name or an id), for launch and
    /// open; nil when none or several do.
    func knownDevice(_ text: String) -> DeviceAddress? {
        guard case .found(let device)? = directoryStorage?.match(text, among: DeviceFilter(status: nil)) else { return nil }
        return device.endpoints.first
    }

    /// Pushes a device table: id, name, kind, platform, model, manufacturer, address,
    /// addresses, transports, status, account; `dev:apps()`.
    func pushDevice(_ device: RemoteDevice, on lua: LuaState) {
        let address = device.endpoints.first ?? DeviceAddress(host: "", port: 0)
        pushDevice(device.info, address: address, on: lua)
        lua.push(device.status.rawValue)
        lua.rawSet(-2, field: "status")
        lua.push(device.account)
        lua.rawSet(-2, field: "account")
        push(Value.array([Value.string(device.transport.rawValue)]), on: lua)
        lua.rawSet(-2, field: "transports")
        push(Value.array(device.endpoints.map { Value.string($0.description) }), on: lua)
        lua.rawSet(-2, field: "addresses")
    }

    // MARK: watch

    /// `baton.watch(filter, {added =, updated =, removed =, enumeration_completed =, error =})`:
    /// a watcher whose handlers run as tasks; it keeps the script running until `:stop()` (or
    /// the end of its to-be-closed scope).
    private func startWatch(_ call: HostCall) throws -> HostResult {
        let filter = try filter(call, 1)
        let lua = call.lua
        guard lua.type(at: 2) == .table else {
            throw call.argumentError(2, "handlers table expected ({added = function(dev) ... end}), got \(lua.typeName(at: 2))")
        }
        let handlers = OptionsTable(call: call, position: 2, function: call.name)
        try handlers.check(allowed: ["added", "updated", "removed", "enumeration_completed", "error"])
        let handlersRef = reference(at: 2, on: lua)
        let number = nextWatcherNumber
        nextWatcherNumber += 1
        retainKeepAlive()
        let watch = try directory.watch(filter) { [self] event in
            switch event {
            case .added(let d), .updated(let d), .removed(let d):
                let field = switch event { case .added: "added"; case .updated: "updated"; default: "removed" }
                startCallback(field, of: handlersRef, name: "watch \(field)") { lua in
                    self.pushDevice(d, on: lua)
                    return 1
                }
            case .enumerationCompleted:
                startCallback("enumeration_completed", of: handlersRef, name: "watch enumeration_completed")
            case .error(let problem):
                startCallback("error", of: handlersRef, name: "watch error") { lua in
                    lua.push(problem)
                    return 1
                }
            }
        }
        watchers[number] = (watch, handlersRef)
        lua.newTable(recordCount: 1)
        lua.push(number)
        lua.rawSet(-2, field: "_watch")
        lua.pushMetatable(named: Self.watcherMetatable)
        lua.setMetatable(-2)
        return .values(1)
    }

    /// `watcher:stop()`: no more events; stopping twice does nothing.
    private func stopWatch(_ call: HostCall) throws -> HostResult {
        let lua = call.lua
        guard lua.type(at: 1) == .table else { throw call.argumentError(1, "watcher expected (call it as w:stop())") }
        lua.rawGet(1, field: "_watch")
        let number = lua.toInteger(at: -1).map(Int.init)
        lua.pop()
        if let number, let (watch, handlers) = watchers.removeValue(forKey: number) {
            directoryStorage?.unwatch(watch)
            release(handlers)
            releaseKeepAlive()
        }
        return .values(0)
    }
}
