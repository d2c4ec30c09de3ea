import BatonCore
import CLuaShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The message value types: `baton.date`, `baton.uuid`, `baton.bytes`, `baton.array` and
/// `baton.message`. The values' metatables (their methods, `d + 60`, `tostring(u)`) belong to
/// the runtime core, which pushes such values for every module; this module adds the functions
/// that make them. Keeps no state.
public final class ValueModule: LuaModule {
    /// A module for one run.
    public init() {}

    /// Adds `date`, `uuid`, `bytes`, `array` and `message`.
    public func install(in runtime: LuaRuntime, table: Int32) throws {
        runtime.register("array", in: table, qualifier: "baton") { call in
            let lua = call.lua
            if call.isNoneOrNil(1) {
                lua.newTable()
            } else {
                try call.table(1)
                lua.setTop(1)
                if lua_getmetatable(lua.pointer, 1) != 0 {
                    let ours = lua.toPointer(at: -1) == call.runtime.metatables.array
                    lua.pop()
                    guard ours else { throw call.argumentError(1, "the table already has a metatable") }
                }
            }
            lua.pushMetatable(named: ValueTypeName.array)
            lua.setMetatable(-2)
            return .values(1)
        }

        runtime.register("date", in: table, qualifier: "baton") { call in
            let lua = call.lua
            switch lua.type(at: 1) {
            case .none, .nil:
                call.runtime.pushDate(Date(), on: lua)
            case .number:
                let seconds = try call.number(1)
                guard seconds.isFinite else { throw call.argumentError(1, "epoch seconds must be finite") }
                call.runtime.pushDate(Date(timeIntervalSince1970: seconds), on: lua)
            case .string:
                let text = try call.string(1)
                guard let date = ISO8601.parse(text) else {
                    throw call.argumentError(1, "not an ISO 8601 date: \"\(text)\"; expected like 2026-11-21T10:00:00Z")
                }
                call.runtime.pushDate(date, on: lua)
            default:
                guard let p = lua.testUserdata(at: 1, named: ValueTypeName.date) else {
                    throw call.argumentError(1, "nil, number, ISO 8601 string or date expected, got \(lua.typeName(at: 1))")
                }
                call.runtime.pushDate(Date(timeIntervalSinceReferenceDate: p.load(as: Double.self)), on: lua)
            }
            return .values(1)
        }

        runtime.register("uuid", in: table, qualifier: "baton") { call in
            if call.isNoneOrNil(1) {
                call.runtime.pushUUID(UUID(), on: call.lua)
            } else if let p = call.lua.testUserdata(at: 1, named: ValueTypeName.uuid) {
                call.runtime.pushUUID(LuaRuntime.uuid(at: p), on: call.lua)
            } else {
                let text = try call.string(1)
                guard let uuid = UUID(uuidString: text) else {
                    throw call.argumentError(1, "not a UUID: \"\(text)\"")
                }
                call.runtime.pushUUID(uuid, on: call.lua)
            }
            return .values(1)
        }

        runtime.register("bytes", in: table, qualifier: "baton") { call in
            let lua = call.lua
            if lua.testUserdata(at: 1, named: ValueTypeName.bytes) != nil {
                lua.setTop(1)
                return .values(1)
            }
            _ = try call.string(1)
            _ = baton_newuserdata(lua.pointer, 0, 1)
            lua.pushValue(at: 1)
            lua_setiuservalue(lua.pointer, -2, 1)
            lua.pushMetatable(named: ValueTypeName.bytes)
            lua.setMetatable(-2)
            return .values(1)
        }

        runtime.register("message", in: table, qualifier: "baton") { call in
            let runtime = call.runtime
            guard call.lua.type(at: 1) == .table else {
                throw call.argumentError(1, "table expected, got \(call.lua.typeName(at: 1))")
            }
            let value: Value
            do { value = try runtime.value(at: 1, on: call.lua) } catch { throw HostError.message(String(describing: error)) }
            guard case .dictionary = value else {
                throw HostError.message("message: a message is a dictionary (string keys), got an array")
            }
            guard runtime.push(value, on: call.lua) else { throw HostError.message("message: nested too deeply") }
            return .values(1)
        }
    }
}
