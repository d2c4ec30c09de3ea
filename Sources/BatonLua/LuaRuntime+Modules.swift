import CLuaShim

extension LuaRuntime {
    /// Makes the `baton` table (global, and what `require "baton"` returns), installs
    /// `modules` into it in order, then runs the prelude.
    func install(_ modules: [any LuaModule]) throws {
        let lua = state
        lua.newTable()
        let m = lua.top
        lua.push("0.1.0")
        lua.rawSet(m, field: "version")
        self.modules = modules
        for module in modules {
            try module.install(in: self, table: m)
            lua.setTop(m)
        }

        // The coroutine library scripts see: Lua's own, with waits inside coroutines passed
        // out to the scheduler (CLuaShim's baton_coroutine.c).
        pushFunction(named: "baton.abandon_wait") { call in
            if let task = call.runtime.current { call.runtime.abandonWait(of: task) }
            return .values(0)
        }
        baton_open_coroutines(lua.pointer)

        lua.pushValue(at: m)
        lua_setglobal(lua.pointer, "baton")

        lua.pushValue(at: m)
        do {
            try runChunk(Prelude.source, named: "baton", arguments: 1)
        } catch {
            throw HostError.message("the baton prelude failed: \(error)")
        }
        lua.setTop(m - 1)
    }

    /// Runs Lua `source` once, protected, on the main state, with the `arguments` values on
    /// top of the stack (popped) as its `...`: how a module written partly in Lua installs that
    /// part. Call while installing. Throws the chunk's error message.
    public func runChunk(_ source: String, named name: String, arguments: Int32) throws {
        let lua = state
        var status = source.utf8CString.withUnsafeBufferPointer { buf in
            baton_loadbuffer(lua.pointer, buf.baseAddress, buf.count - 1, "=" + name)
        }
        if status == LUA_OK {
            baton_insert(lua.pointer, -1 - arguments)
            status = baton_pcall_traceback(lua.pointer, arguments, 0)
        } else {
            // The load error on top of the arguments: keep the error alone.
            baton_insert(lua.pointer, -1 - arguments)
            lua.pop(arguments)
        }
        guard status == LUA_OK else {
            let message = lua.toString(at: -1) ?? "?"
            lua.pop()
            throw HostError.message(message)
        }
    }
}
