import Logging

/// `baton.log.debug/info/warn/error(...)`: the arguments, each through `tostring` and joined
/// by spaces, to ``RuntimeOptions/logger`` at that level (its `source` is `script`). Keeps no
/// state.
public final class LogModule: LuaModule {
    /// A module for one run.
    public init() {}

    /// Adds `baton.log`.
    public func install(in runtime: LuaRuntime, table: Int32) throws {
        let lua = runtime.state
        lua.pushValue(at: table)
        runtime.pushFunction(named: "baton.log") { call in
            let level = try call.string(1)
            let message = try call.string(2)
            let swiftLevel: Logger.Level = switch level {
            case "debug": .debug
            case "warn": .warning
            case "error": .error
            default: .info
            }
            call.runtime.logger.log(level: swiftLevel, "\(message)", source: "script")
            call.runtime.options.trace?.record("log", task: call.runtime.current) {
                $0.field("level", level)
                $0.field("message", message)
            }
            return .values(0)
        }
        try runtime.runChunk(Self.source, named: "baton.log", arguments: 2)
    }

    /// The functions themselves, in Lua: `tostring` runs there, where a `__tostring` may raise.
    static let source = #"""
local baton, emit = ...
local pack, select, tostring, concat = table.pack, select, tostring, table.concat
local log = {}
for _, level in ipairs { "debug", "info", "warn", "error" } do
  log[level] = function(...)
    local n = select("#", ...)
    if n == 1 then return emit(level, tostring((...))) end
    local parts = pack(...)
    for i = 1, n do parts[i] = tostring(parts[i]) end
    return emit(level, concat(parts, " ", 1, n))
  end
end
baton.log = log
"""#
}
