/// The part of the `baton` module written in Lua. It runs once per state, with the module
/// table and a table of internal host functions as its arguments.
enum Prelude {
    static let source = #"""
local baton, host = ...
local pack, select, tostring = table.pack, select, tostring
local concat = table.concat

local log = {}
for _, level in ipairs { "debug", "info", "warn", "error" } do
  local emit = host.log
  log[level] = function(...)
    local n = select("#", ...)
    if n == 1 then return emit(level, tostring((...))) end
    local parts = pack(...)
    for i = 1, n do parts[i] = tostring(parts[i]) end
    return emit(level, concat(parts, " ", 1, n))
  end
end
baton.log = log

package.loaded.baton = baton
"""#
}
