import BatonClient
import BatonCore
import CLuaShim

/// The device table scripts see: `id`, `name`, `kind`, `platform`, `model`, `manufacturer`,
/// `address`, `transports`, `status` (and, from the directory, `addresses` and `account`);
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

    /// Pushes the table of a device an agent described at `address`.
    static func push(_ device: DeviceInfo, address: DeviceAddress, on lua: LuaState, runtime: LuaRuntime) {
        lua.newTable(recordCount: 10)
        for (key, value) in [("id", device.id), ("name", device.name), ("kind", device.kind.rawValue),
                             ("platform", device.platform.rawValue), ("model", device.model),
                             ("manufacturer", device.manufacturer), ("address", address.description),
                             ("status", "available")] {
            lua.push(value)
            lua.rawSet(-2, field: key)
        }
        runtime.push(Value.array([.string("local")]), on: lua)
        lua.rawSet(-2, field: "transports")
        lua.pushMetatable(named: metatable)
        lua.setMetatable(-2)
    }

    /// Pushes the table of a device the directory knows.
    static func push(_ device: RemoteDevice, on lua: LuaState, runtime: LuaRuntime) {
        let address = device.endpoints.first ?? DeviceAddress(host: "", port: 0)
        push(device.info, address: address, on: lua, runtime: runtime)
        lua.push(device.status.rawValue)
        lua.rawSet(-2, field: "status")
        lua.push(device.account)
        lua.rawSet(-2, field: "account")
        runtime.push(Value.array([Value.string(device.transport.rawValue)]), on: lua)
        lua.rawSet(-2, field: "transports")
        runtime.push(Value.array(device.endpoints.map { Value.string($0.description) }), on: lua)
        lua.rawSet(-2, field: "addresses")
    }
}
