-- Move playback sessions between devices, a job list of them at once, with a report.
--
--   baton batch examples/batch-handoff.lua --input examples/handoffs.json \
--     --retries 2 --backoff 500ms..2s --journal handoffs.journal --report handoffs.json
--
-- Each item names a source and a target device ({"key", "from", "to"}, optionally "app"). The
-- handoff's key is the item's idempotency key, so an item retried after a failure, or run again
-- by --resume after the runner was killed, moves the music once: the caller remembers it, not
-- the agents (baton keeps the first handoff's report under its key for 10 minutes, in
-- $XDG_STATE_HOME/baton/handoffs on the machine that runs the batch), so a resume on another
-- machine, or after the window, hands off again. A target that is off (unavailable, 69) is
-- worth a retry; a device no one has heard of (not_found, 68) is not. A target that plays
-- something already is not silenced for a paused source (target_busy); busy = "replace" would.

-- One handoff at a time on a device, across this batch and any other script: an item takes
-- both devices' locks, in name order, so that two items never wait for each other.
local function lock_name(device) return "playback-" .. device:gsub("[^%w._-]", "_") end

function job(item, ctx)
  ctx.device = item.to
  local first, second = item.from, item.to
  if second < first then first, second = second, first end
  local a <close> = baton.lock(lock_name(first), { wait = 60 })
  local b <close> = baton.lock(lock_name(second), { wait = 60 })
  local from = baton.find(item.from, { required = true, timeout = 5 })
  local to = baton.find(item.to, { required = true, timeout = 5 })
  ctx.device = to.name
  local status, report = baton.handoff(from, to, { key = ctx.idempotency_key, app = item.app, timeout = 15 })
  if status == "nothing_playing" then
    ctx.log.info(item.key .. ": " .. from.name .. " plays nothing; nothing to move")
    return
  end
  -- success, or an error of the status's class: the batch retries what --retry-on names.
  baton.check(status, report.detail)
  ctx:changed()
  ctx.log.info(("%s: %s now plays %s from %.2f s (error %+.1f ms)%s"):format(item.key, to.name, report.uri or "?",
    report.position_at_target or 0, report.position_error_ms or 0, report.repeated and ", done before" or ""))
end
