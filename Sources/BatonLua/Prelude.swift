/// The part of the runtime core written in Lua: coroutine functions that pass a waiting baton
/// call's yield through the script's own coroutines. It runs once per state, after the modules
/// are installed, with the `baton` table and a table of internal host functions as its
/// arguments.
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

package.loaded.baton = baton
"""#
}
