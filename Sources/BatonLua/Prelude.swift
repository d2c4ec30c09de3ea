/// The part of the `baton` module written in Lua. It runs once per state, with the module
/// table and a table of internal host functions as its arguments.
enum Prelude {
    static let source = #"""
local baton, host = ...
local SENTINEL = host.sentinel
local pack, unpack, select, tostring, error = table.pack, table.unpack, select, tostring, error
local concat = table.concat
local co_resume, co_yield, co_create = coroutine.resume, coroutine.yield, coroutine.create
local co_isyieldable, co_close = coroutine.isyieldable, coroutine.close

-- A baton call that waits yields SENTINEL up to the scheduler. When the script runs it in a
-- coroutine of its own, pass that yield outward and hand the results back in.
local function relay(co, r)
  while r[1] and r.n == 2 and r[2] == SENTINEL do
    if co_isyieldable() then
      r = pack(co_resume(co, co_yield(SENTINEL)))
    else
      host.abandon_wait()
      r = pack(co_resume(co, false,
        "cannot wait here: this coroutine was resumed where Lua cannot yield " ..
        "(inside a metamethod, an iterator or a C function such as table.sort)"))
    end
  end
  return r
end

function coroutine.resume(co, ...)
  local r = relay(co, pack(co_resume(co, ...)))
  return unpack(r, 1, r.n)
end

function coroutine.wrap(f)
  local co = co_create(f)
  return function(...)
    local r = relay(co, pack(co_resume(co, ...)))
    if r[1] then return unpack(r, 2, r.n) end
    co_close(co)
    error(r[2], 0)
  end
end

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
