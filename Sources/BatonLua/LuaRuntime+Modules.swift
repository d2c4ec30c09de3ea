import CLuaShim
import Logging

extension LuaRuntime {
    /// The `baton` table: global, and what `require "baton"` returns.
    func installBatonModule() throws {
        let lua = state
        lua.newTable()
        let m = lua.top
        lua.push("0.1.0")
        lua.rawSet(m, field: "version")
        installTaskFunctions(module: m)
        installValueTypes(module: m)
        installMessageFunctions(module: m)
        installJSON(module: m)
        installClientFunctions(module: m)
        installDiscoveryFunctions(module: m)

        // Internal functions the prelude needs; not visible to scripts.
        lua.newTable()
        let host = lua.top
        lua_pushlightuserdata(lua.pointer, baton_wait_sentinel())
        lua.rawSet(host, field: "sentinel")
        register("abandon_wait", in: host, qualifier: "baton") { call in
            if let task = call.runtime.current { call.runtime.abandonWait(of: task) }
            return .values(0)
        }
        register("log", in: host, qualifier: "baton.log") { call in
            let level = try call.string(1)
            let message = try call.string(2)
            let runtime = call.runtime
            let swiftLevel: Logger.Level = switch level {
            case "debug": .debug
            case "warn": .warning
            case "error": .error
            default: .info
            }
            runtime.logger.log(level: swiftLevel, "\(message)", source: "script")
            return .values(0)
        }

        lua.pushValue(at: m)
        lua_setglobal(lua.pointer, "baton")

        let code = Prelude.source
        var status = code.utf8CString.withUnsafeBufferPointer { buf in
            baton_loadbuffer(lua.pointer, buf.baseAddress, buf.count - 1, "=baton")
        }
        if status == LUA_OK {
            lua.pushValue(at: m)
            lua.pushValue(at: host)
            status = baton_pcall_traceback(lua.pointer, 2, 0)
        }
        guard status == LUA_OK else {
            let message = lua.toString(at: -1) ?? "?"
            throw HostError.message("the baton prelude failed: \(message)")
        }
        lua.setTop(m - 1)
    }
}
