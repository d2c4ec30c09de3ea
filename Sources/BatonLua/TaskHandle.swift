import CLuaShim

/// The Lua value `baton.spawn` returns: a userdata holding the task's id and state, whose
/// first user value is the results table (done) or the error (failed, or cancelled: the
/// message `task 3 was cancelled`).
enum TaskHandle {
    static let metatable = "baton.task"
    static let running: Int64 = 0
    static let done: Int64 = 1
    static let failed: Int64 = 2
    static let cancelled: Int64 = 3

    /// Pushes a new handle for task `id`.
    static func push(_ lua: LuaState, id: Int) {
        let p = baton_newuserdata(lua.pointer, 16, 1)!
        p.storeBytes(of: Int64(id), as: Int64.self)
        p.storeBytes(of: running, toByteOffset: 8, as: Int64.self)
        lua.pushMetatable(named: metatable)
        lua.setMetatable(-2)
    }

    static func id(_ p: UnsafeMutableRawPointer) -> Int { Int(p.load(as: Int64.self)) }
    static func state(_ p: UnsafeMutableRawPointer) -> Int64 { p.load(fromByteOffset: 8, as: Int64.self) }

    /// Pushes what `:wait()` gives for a finished task: `true, results...` or `false, error`
    /// (the task's error, or the cancellation's message).
    /// Returns how many values it pushed.
    static func pushOutcome(_ lua: LuaState, handle: Int32) -> Int32 {
        let h = lua.absolute(handle)
        let p = lua.toUserdata(at: h)!
        if state(p) == failed || state(p) == cancelled {
            lua.push(false)
            lua_getiuservalue(lua.pointer, h, 1)
            return 2
        }
        lua_getiuservalue(lua.pointer, h, 1)
        let table = lua.top
        lua.rawGet(table, field: "n")
        let n = Int32(lua.toInteger(at: -1) ?? 0)
        lua.pop()
        guard lua.checkStack(n + 2) else {
            lua.pop()
            lua.push(false)
            lua.push("too many results to return")
            return 2
        }
        lua.push(true)
        for i in stride(from: 1, through: Int(n), by: 1) { _ = lua.rawGet(table, index: i) }
        baton_remove(lua.pointer, table)
        return n + 1
    }
}
