import BatonCore
import CLuaShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Metatable names of the userdata types that carry message values.
enum ValueTypeName {
    static let array = "baton.array"
    static let date = "baton.date"
    static let uuid = "baton.uuid"
    static let bytes = "baton.bytes"
    static let null = "baton.json.null"
}

extension LuaRuntime {
    /// `baton.date`, `baton.uuid`, `baton.bytes`, `baton.array` and their metatables.
    func installValueTypes(module m: Int32) {
        let lua = state

        // baton.array: a marker metatable, so an empty table can mean an empty array.
        luaL_newmetatable(lua.pointer, ValueTypeName.array)
        metatables.array = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.arrayRef = lua.ref()
        lua.pop()
        register("array", in: m, qualifier: "baton") { call in
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

        installDate(module: m)
        installUUID(module: m)
        installBytes(module: m)
    }

    // MARK: dates

    /// Pushes a `baton.date` userdata.
    public func pushDate(_ date: Date, on lua: LuaState) {
        let p = baton_newuserdata(lua.pointer, 8, 0)!
        p.storeBytes(of: date.timeIntervalSince1970, as: Double.self)
        lua.pushRef(metatables.dateRef)
        lua.setMetatable(-2)
    }

    private func installDate(module m: Int32) {
        let lua = state
        register("date", in: m, qualifier: "baton") { call in
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
                call.runtime.pushDate(Date(timeIntervalSince1970: p.load(as: Double.self)), on: lua)
            }
            return .values(1)
        }

        luaL_newmetatable(lua.pointer, ValueTypeName.date)
        metatables.date = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.dateRef = lua.ref()
        let mt = lua.top
        func epoch(_ call: HostCall, _ i: Int32) throws -> Double {
            guard let p = call.lua.testUserdata(at: i, named: ValueTypeName.date) else {
                throw call.argumentError(i, "date expected, got \(call.lua.typeName(at: i))")
            }
            return p.load(as: Double.self)
        }
        lua.newTable()
        register("epoch", in: -1, qualifier: "date") { call in
            call.lua.push(try epoch(call, 1))
            return .values(1)
        }
        register("iso", in: -1, qualifier: "date") { call in
            call.lua.push(ISO8601.format(Date(timeIntervalSince1970: try epoch(call, 1))))
            return .values(1)
        }
        lua.rawSet(mt, field: "__index")
        register("__tostring", in: mt, qualifier: "date") { call in
            call.lua.push(ISO8601.format(Date(timeIntervalSince1970: try epoch(call, 1))))
            return .values(1)
        }
        register("__eq", in: mt, qualifier: "date") { call in
            call.lua.push(try epoch(call, 1) == epoch(call, 2))
            return .values(1)
        }
        register("__lt", in: mt, qualifier: "date") { call in
            call.lua.push(try epoch(call, 1) < epoch(call, 2))
            return .values(1)
        }
        register("__le", in: mt, qualifier: "date") { call in
            call.lua.push(try epoch(call, 1) <= epoch(call, 2))
            return .values(1)
        }
        // date + seconds, seconds + date: a date; date - date: seconds; date - seconds: a date.
        register("__add", in: mt, qualifier: "date") { call in
            let (d, s): (Double, Double) = call.lua.type(at: 1) == .number
                ? (try epoch(call, 2), try call.number(1)) : (try epoch(call, 1), try call.number(2))
            call.runtime.pushDate(Date(timeIntervalSince1970: d + s), on: call.lua)
            return .values(1)
        }
        register("__sub", in: mt, qualifier: "date") { call in
            let d = try epoch(call, 1)
            if call.lua.type(at: 2) == .number {
                call.runtime.pushDate(Date(timeIntervalSince1970: d - (try call.number(2))), on: call.lua)
            } else {
                call.lua.push(d - (try epoch(call, 2)))
            }
            return .values(1)
        }
        lua.pop()
    }

    // MARK: UUIDs

    /// Pushes a `baton.uuid` userdata.
    public func pushUUID(_ uuid: UUID, on lua: LuaState) {
        let p = baton_newuserdata(lua.pointer, 16, 0)!
        withUnsafeBytes(of: uuid.uuid) { p.copyMemory(from: $0.baseAddress!, byteCount: 16) }
        lua.pushRef(metatables.uuidRef)
        lua.setMetatable(-2)
    }

    static func uuid(at p: UnsafeMutableRawPointer) -> UUID {
        var u = UUID().uuid
        withUnsafeMutableBytes(of: &u) { $0.copyMemory(from: UnsafeRawBufferPointer(start: p, count: 16)) }
        return UUID(uuid: u)
    }

    private func installUUID(module m: Int32) {
        let lua = state
        register("uuid", in: m, qualifier: "baton") { call in
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
        luaL_newmetatable(lua.pointer, ValueTypeName.uuid)
        metatables.uuid = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.uuidRef = lua.ref()
        func uuid(_ call: HostCall, _ i: Int32) throws -> UUID {
            guard let p = call.lua.testUserdata(at: i, named: ValueTypeName.uuid) else {
                throw call.argumentError(i, "uuid expected, got \(call.lua.typeName(at: i))")
            }
            return LuaRuntime.uuid(at: p)
        }
        register("__tostring", in: -1, qualifier: "uuid") { call in
            call.lua.push(try uuid(call, 1).uuidString.lowercased())
            return .values(1)
        }
        register("__eq", in: -1, qualifier: "uuid") { call in
            call.lua.push(try uuid(call, 1) == uuid(call, 2))
            return .values(1)
        }
        lua.pop()
    }

    // MARK: bytes

    /// Pushes a `baton.bytes` userdata holding `bytes`.
    public func pushBytes(_ bytes: [UInt8], on lua: LuaState) {
        _ = baton_newuserdata(lua.pointer, 0, 1)
        lua.push(bytes: bytes)
        lua_setiuservalue(lua.pointer, -2, 1)
        lua.pushRef(metatables.bytesRef)
        lua.setMetatable(-2)
    }

    /// Pushes the Lua string inside the bytes userdata at `index`.
    static func pushBytesString(_ lua: LuaState, at index: Int32) {
        lua_getiuservalue(lua.pointer, index, 1)
    }

    private func installBytes(module m: Int32) {
        let lua = state
        register("bytes", in: m, qualifier: "baton") { call in
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
        luaL_newmetatable(lua.pointer, ValueTypeName.bytes)
        metatables.bytes = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.bytesRef = lua.ref()
        let mt = lua.top
        func check(_ call: HostCall, _ i: Int32) throws {
            guard call.lua.testUserdata(at: i, named: ValueTypeName.bytes) != nil else {
                throw call.argumentError(i, "bytes expected, got \(call.lua.typeName(at: i))")
            }
        }
        lua.newTable()
        register("string", in: -1, qualifier: "bytes") { call in
            try check(call, 1)
            LuaRuntime.pushBytesString(call.lua, at: 1)
            return .values(1)
        }
        lua.rawSet(mt, field: "__index")
        register("__tostring", in: mt, qualifier: "bytes") { call in
            try check(call, 1)
            LuaRuntime.pushBytesString(call.lua, at: 1)
            return .values(1)
        }
        register("__len", in: mt, qualifier: "bytes") { call in
            try check(call, 1)
            LuaRuntime.pushBytesString(call.lua, at: 1)
            call.lua.push(call.lua.rawLength(at: -1))
            return .values(1)
        }
        register("__eq", in: mt, qualifier: "bytes") { call in
            try check(call, 1)
            try check(call, 2)
            LuaRuntime.pushBytesString(call.lua, at: 1)
            LuaRuntime.pushBytesString(call.lua, at: 2)
            call.lua.push(call.lua.rawEqual(-1, -2))
            return .values(1)
        }
        lua.pop()
    }
}
