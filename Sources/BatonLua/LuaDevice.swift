import BatonClient
import BatonCore
import CLuaShim

/// The device table scripts see: `id`, `name`, `kind`, `platform`, `model`, `manufacturer`,
/// `address` (its first TCP endpoint, if any), `routes` (every route, described), `transports`,
/// `status` (and, from the directory, `addresses` and `account`). A handle: calls given it
/// resolve its `id` on the Swift side (``DeviceAccess/target(id:routes:account:)``);
/// its strings are for people, and dialled only for a table no run pushed (a saved one);
/// `dev:apps()` when the ``ClientModule`` is installed; `tostring(dev)` is its name.
enum LuaDevice {
    /// The metatable's name; ``ClientModule`` gives it `apps`.
    static let metatable = "baton.device"

    /// Pushes the device metatable, made first if missing, with `__tostring`: the device's
    /// name (its id, or its address, when it has none).
    static func pushMetatable(_ runtime: LuaRuntime) {
        guard luaL_newmetatable(runtime.state.pointer, metatable) != 0 else { return }
        runtime.register("__tostring", in: -1, qualifier: "device") { call in
            let lua = call.lua
            guard lua.type(at: 1) == .table else { throw call.argumentError(1, "device expected") }
            var text = ""
            for field in ["name", "id", "address"] where text.isEmpty {
                lua.rawGet(1, field: field)
                text = lua.type(at: -1) == .string ? lua.toString(at: -1) ?? "" : ""
                lua.pop()
            }
            lua.push(text.isEmpty ? "device" : text)
            return .values(1)
        }
    }

    /// Pushes the table of a device an agent described at `address`, and keeps that route
    /// for its id in `access` (what a call given this table dials).
    static func push(_ device: DeviceInfo, address: DeviceAddress, access: DeviceAccess, on lua: LuaState, runtime: LuaRuntime) {
        access.remember(id: device.id, routes: [.tcp(address)], account: "")
        push(device, routes: [.tcp(address)], on: lua, runtime: runtime)
    }

    /// Pushes the table of a device the directory knows, and keeps its routes for its id in
    /// `access`: a call given this table reaches the id at what the directory knows then, or
    /// these routes, never at the table's strings.
    static func push(_ device: RemoteDevice, access: DeviceAccess, on lua: LuaState, runtime: LuaRuntime) {
        access.remember(id: device.info.id, routes: device.routes, account: device.account)
        push(device.info, routes: device.routes, on: lua, runtime: runtime)
        lua.push(device.status.rawValue)
        lua.rawSet(-2, field: "status")
        lua.push(device.account)
        lua.rawSet(-2, field: "account")
        runtime.push(Value.array([Value.string(device.transport.rawValue)]), on: lua)
        lua.rawSet(-2, field: "transports")
        runtime.push(Value.array(device.endpoints.map { Value.string($0.description) }), on: lua)
        lua.rawSet(-2, field: "addresses")
    }

    /// The fields every device table has: `address` is its first TCP endpoint, for people
    /// (nil when it has none), `routes` every route's description (`host:port`,
    /// `broker:ID`), for display.
    private static func push(_ device: DeviceInfo, routes: [DeviceRoute], on lua: LuaState, runtime: LuaRuntime) {
        lua.newTable(recordCount: 11)
        for (key, value) in [("id", device.id), ("name", device.name), ("kind", device.kind.rawValue),
                             ("platform", device.platform.rawValue), ("model", device.model),
                             ("manufacturer", device.manufacturer), ("status", "available")] {
            lua.push(value)
            lua.rawSet(-2, field: key)
        }
        if let address = routes.lazy.compactMap(\.endpoint).first {
            lua.push(address.description)
            lua.rawSet(-2, field: "address")
        }
        runtime.push(Value.array(routes.map { Value.string($0.description) }), on: lua)
        lua.rawSet(-2, field: "routes")
        runtime.push(Value.array([.string("local")]), on: lua)
        lua.rawSet(-2, field: "transports")
        lua.pushMetatable(named: metatable)
        lua.setMetatable(-2)
    }
}
