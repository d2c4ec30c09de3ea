import BatonClient
import BatonCore
import CLuaShim
import NIOCore

/// Finding devices: `baton.filter`, `baton.devices` and `baton.watch` (and the watcher's
/// `stop`, also its `__close`). Owns the running watchers: each keeps the run alive until it
/// stops, and a task's stop when it is cancelled. Shares the client and directory with
/// ``ClientModule`` through a ``DeviceAccess``.
public final class DiscoveryModule: LuaModule, @unchecked Sendable {
    /// The client and directory it finds devices through.
    public let access: DeviceAccess
    /// Running watchers, by the number in their table.
    private var watchers: [Int: Watcher] = [:]
    private var nextWatcherNumber = 1

    private struct Watcher {
        let watch: DeviceDirectory.Watch
        let handlers: LuaReference
        let owner: LuaTaskID?
    }

    static let filterMetatable = "baton.filter"
    static let watcherMetatable = "baton.watcher"
    /// How long `find` and `devices` wait by default.
    static let defaultTimeout = TimeAmount.seconds(3)

    /// A module finding devices through `access` (share it with the run's ``ClientModule``).
    public init(access: DeviceAccess) {
        self.access = access
    }

    /// Adds `filter`, `devices` and `watch`, and the watcher's methods.
    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        access.attach(to: runtime)
        let lua = runtime.state
        runtime.register("filter", in: m, qualifier: "baton") { call in try Self.makeFilter(call) }
        runtime.register("devices", in: m, qualifier: "baton") { [self] call in try listDevices(call) }
        runtime.register("watch", in: m, qualifier: "baton") { [self] call in try startWatch(call) }
        luaL_newmetatable(lua.pointer, Self.filterMetatable)
        lua.pop()
        // Device tables it pushes print as their names, with or without the client module.
        LuaDevice.pushMetatable(runtime)
        lua.pop()
        luaL_newmetatable(lua.pointer, Self.watcherMetatable)
        lua.newTable()
        runtime.register("stop", in: -1, qualifier: "watcher") { [self] call in try stopWatch(call) }
        lua.rawSet(-2, field: "__index")
        runtime.register("__close", in: -1, qualifier: "watcher") { [self] call in try stopWatch(call) }
        lua.pop()
    }

    /// Stops the directory and forgets the watchers.
    public func runFinished(_ runtime: LuaRuntime) {
        // Its mDNS sockets close; watchers hear nothing more.
        access.stop()
        watchers.removeAll()
    }

    /// Stops the watchers `task` started.
    public func taskCancelled(_ task: LuaTaskID, in runtime: LuaRuntime) {
        for (number, watcher) in watchers where watcher.owner == task {
            stop(number, in: runtime)
        }
    }

    // MARK: filters

    /// The filter at `position`: a table of `kind`, `transport`, `status`, `platform`,
    /// `authorization` (kind and platform: a string or a list), or nil for the default.
    static func filter(_ call: HostCall, _ position: Int32) throws -> DeviceFilter {
        if call.isNoneOrNil(position) { return DeviceFilter() }
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "filter table expected (baton.filter{kind = \"tv\"}), got \(call.lua.typeName(at: position))")
        }
        let options = OptionTable(call, at: position, function: call.name)
        try options.check(allowed: ["kind", "transport", "status", "platform", "authorization"])
        do {
            return try DeviceFilter.parse(
                kinds: options.stringOrStrings("kind") ?? [], platforms: options.stringOrStrings("platform") ?? [],
                transport: options.string("transport"), status: options.string("status"),
                authorization: options.string("authorization"))
        } catch let error as DeviceFilter.ParseError {
            throw HostError.message("\(call.name): \(error)")
        }
    }

    /// `baton.filter{...}`: checks the table now (so mistakes show where they are made) and
    /// returns it, marked as a filter.
    private static func makeFilter(_ call: HostCall) throws -> HostResult {
        _ = try filter(call, 1)
        call.lua.pushValue(at: 1)
        call.lua.pushMetatable(named: filterMetatable)
        call.lua.setMetatable(-2)
        return .values(1)
    }

    /// The `timeout` of an options table at `position`, or the default.
    static func timeout(_ call: HostCall, _ position: Int32, allowing more: Set<String> = []) throws -> TimeAmount {
        guard call.lua.type(at: position) == .table else {
            if call.isNoneOrNil(position) { return defaultTimeout }
            throw call.argumentError(position, "options table expected ({timeout = 2}), got \(call.lua.typeName(at: position))")
        }
        let options = OptionTable(call, at: position, function: call.name)
        try options.check(allowed: more.union(["timeout"]))
        call.lua.rawGet(position, field: "timeout")
        defer { call.lua.pop() }
        if call.lua.type(at: -1) == .nil { return defaultTimeout }
        guard let seconds = call.lua.toNumber(at: -1), seconds >= 0, seconds <= 86_400 else {
            throw HostError.message("\(call.name): timeout must be a number of seconds between 0 and 86400")
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }

    // MARK: devices

    /// `baton.devices([filter], [{timeout =}])`: the devices known once enumeration is over
    /// (or the timeout passed), sorted by name.
    private func listDevices(_ call: HostCall) throws -> HostResult {
        let filter = try Self.filter(call, 1)
        let timeout = try Self.timeout(call, 2)
        let runtime = call.runtime
        let directory = try access.directory
        let eventLoop = runtime.eventLoop
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
        return try runtime.wait(call, for: promise.futureResult) { devices, lua in
            lua.newTable(arrayCount: Int32(devices.count))
            for (i, device) in devices.enumerated() {
                LuaDevice.push(device, access: self.access, on: lua, runtime: runtime)
                lua.rawSet(-2, index: i + 1)
            }
            return 1
        }
    }

    // MARK: watch

    /// `baton.watch(filter, {added =, updated =, removed =, enumeration_completed =, error =})`:
    /// a watcher whose handlers run as tasks; it keeps the script running until `:stop()` (or
    /// the end of its to-be-closed scope, or the cancellation of the task that started it).
    private func startWatch(_ call: HostCall) throws -> HostResult {
        let filter = try Self.filter(call, 1)
        let lua = call.lua
        let runtime = call.runtime
        guard lua.type(at: 2) == .table else {
            throw call.argumentError(2, "handlers table expected ({added = function(dev) ... end}), got \(lua.typeName(at: 2))")
        }
        let handlers = OptionTable(call, at: 2, function: call.name)
        try handlers.check(allowed: ["added", "updated", "removed", "enumeration_completed", "error"])
        let directory = try access.directory
        let handlersRef = runtime.reference(at: 2, on: lua)
        let number = nextWatcherNumber
        nextWatcherNumber += 1
        runtime.retainKeepAlive()
        let watch = directory.watch(filter) { event in
            switch event {
            case .added(let d), .updated(let d), .removed(let d):
                let field = switch event { case .added: "added"; case .updated: "updated"; default: "removed" }
                runtime.options.trace?.record("event") {
                    $0.field("watcher", number)
                    $0.field("event", field)
                    $0.field("device", d.info.name)
                    $0.field("id", d.info.id)
                }
                runtime.startCallback(field, of: handlersRef, name: "watch \(field)") { lua in
                    LuaDevice.push(d, access: self.access, on: lua, runtime: runtime)
                    return 1
                }
            case .enumerationCompleted:
                runtime.options.trace?.record("event") {
                    $0.field("watcher", number)
                    $0.field("event", "enumeration_completed")
                }
                runtime.startCallback("enumeration_completed", of: handlersRef, name: "watch enumeration_completed")
            case .error(let problem):
                runtime.startCallback("error", of: handlersRef, name: "watch error") { lua in
                    lua.push(problem)
                    return 1
                }
            }
        }
        watchers[number] = Watcher(watch: watch, handlers: handlersRef, owner: runtime.currentTaskID)
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
        if let number { stop(number, in: call.runtime) }
        return .values(0)
    }

    private func stop(_ number: Int, in runtime: LuaRuntime) {
        guard let watcher = watchers.removeValue(forKey: number) else { return }
        access.startedDirectory?.unwatch(watcher.watch)
        runtime.release(watcher.handlers)
        runtime.releaseKeepAlive()
    }
}
