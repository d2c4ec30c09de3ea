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
}

extension LuaRuntime {
    /// The metatables of `baton.date`, `baton.uuid`, `baton.bytes` and `baton.array`, with
    /// their methods: part of the core, since every module that pushes a message needs them.
    /// ``ValueModule`` adds the functions that make these values.
    func installValueMetatables() {
        let lua = state

        // baton.array: a marker metatable, so an empty table can mean an empty array.
        luaL_newmetatable(lua.pointer, ValueTypeName.array)
        metatables.array = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.arrayRef = lua.ref()
        lua.pop()

        installDate()
        installUUID()
        installBytes()
    }

    // MARK: dates

    /// Pushes a `baton.date` userdata. It holds the Date's own value (seconds since 2001), so
    /// that a date goes into Lua and back exactly: seconds since 1970 in a Double lose a
    /// microsecond past 2106.
    public func pushDate(_ date: Date, on lua: LuaState) {
        let p = baton_newuserdata(lua.pointer, 8, 0)!
        p.storeBytes(of: date.timeIntervalSinceReferenceDate, as: Double.self)
        lua.pushRef(metatables.dateRef)
        lua.setMetatable(-2)
    }

    private func installDate() {
        let lua = state
        luaL_newmetatable(lua.pointer, ValueTypeName.date)
        metatables.date = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.dateRef = lua.ref()
        let mt = lua.top
        /// The date argument `i`, as the Date's own seconds (since 2001).
        func stored(_ call: HostCall, _ i: Int32) throws -> Double {
            guard let p = call.lua.testUserdata(at: i, named: ValueTypeName.date) else {
                throw call.argumentError(i, "date expected, got \(call.lua.typeName(at: i))")
            }
            return p.load(as: Double.self)
        }
        func date(_ call: HostCall, _ i: Int32) throws -> Date { Date(timeIntervalSinceReferenceDate: try stored(call, i)) }
        lua.newTable()
        register("epoch", in: -1, qualifier: "date") { call in
            call.lua.push(try date(call, 1).timeIntervalSince1970)
            return .values(1)
        }
        register("iso", in: -1, qualifier: "date") { call in
            call.lua.push(ISO8601.format(try date(call, 1)))
            return .values(1)
        }
        lua.rawSet(mt, field: "__index")
        register("__tostring", in: mt, qualifier: "date") { call in
            call.lua.push(ISO8601.format(try date(call, 1)))
            return .values(1)
        }
        register("__eq", in: mt, qualifier: "date") { call in
            call.lua.push(try stored(call, 1) == stored(call, 2))
            return .values(1)
        }
        register("__lt", in: mt, qualifier: "date") { call in
            call.lua.push(try stored(call, 1) < stored(call, 2))
            return .values(1)
        }
        register("__le", in: mt, qualifier: "date") { call in
            call.lua.push(try stored(call, 1) <= stored(call, 2))
            return .values(1)
        }
        // date + seconds, seconds + date: a date; date - date: seconds; date - seconds: a date.
        register("__add", in: mt, qualifier: "date") { call in
            let (d, s): (Double, Double) = call.lua.type(at: 1) == .number
                ? (try stored(call, 2), try call.number(1)) : (try stored(call, 1), try call.number(2))
            call.runtime.pushDate(Date(timeIntervalSinceReferenceDate: d + s), on: call.lua)
            return .values(1)
        }
        register("__sub", in: mt, qualifier: "date") { call in
            let d = try stored(call, 1)
            if call.lua.type(at: 2) == .number {
                call.runtime.pushDate(Date(timeIntervalSinceReferenceDate: d - (try call.number(2))), on: call.lua)
            } else {
                call.lua.push(d - (try stored(call, 2)))
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

    private func installUUID() {
        let lua = state
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

    private func installBytes() {
        let lua = state
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
