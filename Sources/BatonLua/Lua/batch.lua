local baton, host = ...
local floor, random = math.floor, math.random

local function fail(message) error("baton.batch: " .. message, 3) end

-- A count, or "P%" of the items.
local function share(value, total, what)
  if type(value) == "number" and value >= 0 then return floor(value) end
  local text = type(value) == "string" and value
  local percent = text and tonumber(text:match("^(%d+%.?%d*)%%$"))
  if percent then return floor(total * percent / 100) end
  if text and text:match("^%d+$") then return tonumber(text) end
  fail(what .. " must be a count or a percentage like \"10%\", got " .. tostring(value))
end

-- "soon,fail=N" (start no new item once N failed) or "now,fail=N" (and cancel the running
-- ones), N a count or a percentage: GNU parallel's --halt.
local function halting(halt, total)
  if halt == nil then return nil end
  local when, limit
  if type(halt) == "string" then when, limit = halt:match("^(%a+),fail=(%d+%.?%d*%%?)$") end
  if when ~= "soon" and when ~= "now" then
    fail("halt must be \"soon,fail=N\" or \"now,fail=N\" (N a count or a percentage), got " .. tostring(halt))
  end
  return { now = when == "now", after = math.max(1, share(limit, total, "halt's fail")) }
end

local function key_of(item, index, key)
  if type(key) == "function" then return tostring(key(item, index)) end
  if type(item) == "table" then
    local k = item[key or "key"]
    if k == nil and key == nil then k = item.id end
    if k ~= nil then return tostring(k) end
  end
  return tostring(index)
end

function baton.batch(items, fn, opts)
  if type(items) ~= "table" then fail("items must be an array, got " .. type(items)) end
  if type(fn) ~= "function" then fail("fn must be a function(item, ctx), got " .. type(fn)) end
  opts = opts or {}
  local jobs = opts.jobs or 4
  if math.type(jobs) ~= "integer" or jobs < 1 then fail("jobs must be an integer from 1, got " .. tostring(jobs)) end
  local retries = opts.retries or 0
  local retry_on = { unavailable = true, timeout = true }
  if opts.retry_on then
    retry_on = {}
    for _, class in ipairs(opts.retry_on) do retry_on[class] = true end
  end
  local backoff_min, backoff_max = 0.1, 5
  if opts.backoff then backoff_min, backoff_max = opts.backoff[1] or backoff_min, opts.backoff[2] or backoff_max end
  local item_timeout, timeout, grace = opts.item_timeout, opts.timeout, opts.grace or 10
  local id = opts.id or tostring(baton.uuid())
  local total = #items
  -- Keys name items in the journal and to --resume: two items with one key would be one.
  local keys, seen = {}, {}
  for index = 1, total do
    local key = key_of(items[index], index, opts.key)
    if seen[key] then
      fail(("items %d and %d have the same key %q: keys must be unique (the journal and a resume go by them)"):format(seen[key], index, key))
    end
    seen[key], keys[index] = index, key
  end
  local allowed = share(opts.tolerate or 0, total, "tolerate")
  local halt = halting(opts.halt, total)
  local counts = { total = total, succeeded = 0, changed = 0, failed = 0, retried = 0, skipped = 0, in_doubt = 0, not_run = 0 }
  local journal, skip, doubt = opts.journal, opts.skip or {}, opts.in_doubt or {}
  local in_doubt_policy = opts.in_doubt_policy or "retry"
  if in_doubt_policy == "check" and type(opts.verify) ~= "function" then
    fail("in_doubt_policy \"check\" needs verify = function(item, ctx)")
  end
  local report = { id = id, started = baton.date(), counts = counts, failures_by_class = {}, items = {} }
  local t0 = baton.now()

  -- Why the batch stops before its end: "halted", "timed_out" or "cancelled" (a signal).
  local stop, signal
  local running = {} -- the workers in an item now, and their items' entries
  local cancel -- cancel(worker, entry, timed_out): ends a worker in the middle of its item (below)
  local function cancel_running()
    local now_running = {}
    for worker, entry in pairs(running) do now_running[worker] = entry end
    for worker, entry in pairs(now_running) do
      entry.stopped = true
      cancel(worker, entry, false)
    end
  end
  local function stop_batch(why, at_once)
    stop = stop or why
    if at_once then cancel_running() end
  end

  -- Appends a record to the journal; false once it cannot be written. Then nothing new
  -- starts (an item whose start is not on disk would break the journal's promise), the
  -- running items finish, and the batch fails with journal_failed.
  local journal_error
  local function record(fields)
    if not journal then return true end
    if journal_error then return false end
    local failure = host.append(journal, baton.json.encode(fields))
    if failure then
      journal_error = failure
      stop = "journal_failed"
      return false
    end
    return true
  end

  -- Where each entry's item is and when it began, apart from what the report shows.
  local index_of, began = {}, {}

  -- An item's entry, ready for its first attempt; nil when the item is settled without one
  -- (ended in an earlier run, or in doubt and settled by the policy).
  local function begin(index)
    local item, key = items[index], keys[index]
    local entry = { key = key, attempts = 0, started = baton.date() }
    report.items[index] = entry
    if skip[key] then
      counts.skipped = counts.skipped + 1
      entry.status, entry.duration = "skipped", 0
      return nil
    end
    if doubt[key] then
      -- Started by an earlier run that never said how it ended.
      entry.was_in_doubt = true
      if in_doubt_policy == "check" then
        -- verify(item, ctx) says whether the item's work is done already.
        local t = baton.now()
        -- The trace shows verify's calls under the item's key (attempt 0), and what it said.
        host.trace_item(key, 0)
        local ok, done = pcall(opts.verify, item, { key = key, batch = id, idempotency_key = id .. "/" .. key, log = baton.log })
        host.verified(key, ok and done and true or false, not ok and tostring(done) or nil)
        if ok and done then
          counts.succeeded = counts.succeeded + 1
          entry.status, entry.verified, entry.duration = "ok", true, baton.now() - t
          record({ kind = "end", key = key, status = "ok", attempts = 0, verified = true, time = baton.date() })
          return nil
        end
      elseif in_doubt_policy == "skip" then
        counts.in_doubt = counts.in_doubt + 1
        entry.status, entry.duration = "in_doubt", 0
        return nil
      end
    end
    index_of[entry], began[entry] = index, baton.now()
    return entry
  end

  -- What an attempt came to, for `entry`: nil once the item has its status, else the pause
  -- before the next attempt. `ok`, `err`, `traceback`: what fn did; `timed_out`: it was
  -- cancelled at the item timeout.
  local contexts, changed = {}, {}
  local function conclude(entry, ok, err, traceback, timed_out)
    local ctx, item = contexts[entry], items[index_of[entry]]
    if type(ctx.device) == "string" then entry.device = ctx.device
    elseif type(item) == "table" and type(item.device) == "string" then entry.device = item.device end
    if ok then
      local did = changed[entry] == true
      entry.status, entry.changed, entry.error = did and "changed" or "ok", did, nil
      return nil
    end
    if entry.stopped then
      -- Cancelled by the batch's stop: what it did is not known.
      entry.status, entry.error = "cancelled", nil
      return nil
    end
    local class = type(err) == "table" and err.class or "script"
    local message = tostring(err)
    if timed_out then
      class, message, traceback = "timeout", ("the item did not finish within %g s"):format(item_timeout), nil
    end
    entry.error = { class = class, message = message, retryable = retry_on[class] == true, traceback = traceback }
    if entry.attempts > retries or not retry_on[class] or stop then
      entry.status = "failed"
      return nil
    end
    -- Kept, so that an item that succeeds later still says why it needed more attempts.
    entry.retried_after = entry.retried_after or {}
    entry.retried_after[#entry.retried_after + 1] = { class = class, message = message }
    local pause = math.min(backoff_max, backoff_min * 2 ^ (entry.attempts - 1)) * (0.5 + random() / 2)
    host.retry(entry.key, entry.attempts, class, pause)
    return pause
  end

  -- One attempt at an item, run in the worker `worker` itself (no task of its own: an item
  -- costs a call, not a task). A cancellation (the item timeout, a stop) ends the worker and is
  -- concluded by whoever cancelled it. Returns what `conclude` returns.
  local function attempt(entry, worker)
    local item, key = items[index_of[entry]], entry.key
    if not record({ kind = "start", key = key, attempt = entry.attempts + 1, time = baton.date() }) then
      -- Not started: its start could not be journaled.
      entry.status = entry.attempts == 0 and "not_run" or "failed"
      return nil
    end
    entry.attempts = entry.attempts + 1
    changed[entry] = nil
    local ctx = {
      key = key, attempt = entry.attempts, batch = id, idempotency_key = id .. "/" .. key, log = baton.log,
      changed = function() changed[entry] = true end,
    }
    contexts[entry] = ctx
    host.trace_item(key, entry.attempts)
    running[worker] = entry
    local timer = item_timeout and baton.after(item_timeout, function() cancel(worker, entry, true) end)
    -- The item's own errors are caught here (with their traceback), so they are the batch's to
    -- count, not the run's.
    local traceback
    local ok, err = xpcall(fn, function(e)
      traceback = debug.traceback(nil, 2)
      host.item_error(tostring(e), type(e) == "table" and e.class or "script", traceback)
      return e
    end, item, ctx)
    if timer then timer:stop() end
    running[worker] = nil
    return conclude(entry, ok, err, traceback, false)
  end

  local function finish(entry)
    entry.duration = baton.now() - began[entry]
    record({ kind = "end", key = entry.key, status = entry.status, attempts = entry.attempts, time = baton.date(),
             error = entry.error and { class = entry.error.class, message = entry.error.message } or nil })
    if entry.status == "failed" then
      counts.failed = counts.failed + 1
      local class = entry.error.class
      report.failures_by_class[class] = (report.failures_by_class[class] or 0) + 1
      if halt and counts.failed >= halt.after then stop_batch("halted", halt.now) end
    elseif entry.status == "cancelled" then
      counts.in_doubt = counts.in_doubt + 1
    elseif entry.status == "not_run" then
      counts.not_run = counts.not_run + 1
    else
      counts.succeeded = counts.succeeded + 1
      if entry.changed then counts.changed = counts.changed + 1 end
    end
  end

  -- Watches what can stop the batch from outside (a signal, the deadline) and draws progress.
  local finished = false
  if opts.signals or timeout or opts.progress then
    local signalled_at
    -- It ends by itself within a tick of the batch's end (cancelling it would mark it so in
    -- a trace); baton batch exits at once anyway.
    baton.spawn(function()
      while not finished do
        baton.sleep(0.1)
        if finished then break end
        local signo, count = host.signal()
        if signo ~= 0 then
          if not signalled_at then
            signalled_at, signal, stop = baton.now(), signo, "cancelled"
            if next(running) then
              baton.log.warn(("interrupted: no new items start; the running ones get %g s to finish (signal again to cancel them)"):format(grace))
            end
          end
          if count >= 2 or baton.now() - signalled_at >= grace then cancel_running() end
        end
        if timeout and baton.now() - t0 >= timeout then stop_batch("timed_out", true) end
        if opts.progress then
          opts.progress(counts, baton.now() - t0)
        end
      end
    end)
  end

  -- Up to `jobs` workers take items: a retry whose pause is over first, else the next item.
  -- A pause holds no worker: it waits in a task of its own, then queues its item again.
  local next_index, ready, active, pending = 1, {}, 0, {}
  local function next_entry()
    if #ready > 0 then return table.remove(ready, 1) end
    while next_index <= total do
      local index = next_index
      next_index = index + 1
      local entry = begin(index)
      if entry then return entry end
    end
  end
  local spawn_worker
  -- After an attempt: a pause in a task of its own, then the item queued again; or its end.
  local function after_attempt(entry, pause)
    if not pause then return finish(entry) end
    pending[#pending + 1] = baton.spawn(function()
      -- In steps, so that a stop does not wait out a long pause.
      local resume_at = baton.now() + pause
      while not stop and baton.now() < resume_at do baton.sleep(math.min(0.1, resume_at - baton.now())) end
      if stop then
        entry.status = "failed"
        return finish(entry)
      end
      counts.retried = counts.retried + 1
      ready[#ready + 1] = entry
      if active < jobs then spawn_worker() end
    end)
  end
  local function work(worker)
    while not stop do
      local entry = next_entry()
      if not entry then break end
      after_attempt(entry, attempt(entry, worker))
    end
    active = active - 1
  end
  spawn_worker = function()
    active = active + 1
    local worker = {}
    worker.task = baton.spawn(function() work(worker) end)
    pending[#pending + 1] = worker.task
  end
  -- A worker stuck in an item: the item is settled here (cancelled, or timed out), the worker
  -- ends, and unless the batch stops another takes its place.
  cancel = function(worker, entry, timed_out)
    if running[worker] ~= entry then return end
    running[worker] = nil
    active = active - 1
    -- Settled in a task the batch waits for (its journal record waits on the disk), queued
    -- before the worker goes, so that the batch's end comes after it.
    pending[#pending + 1] = baton.spawn(function() after_attempt(entry, conclude(entry, false, nil, nil, timed_out)) end)
    worker.task:cancel()
    if not stop and active < jobs and (#ready > 0 or next_index <= total) then spawn_worker() end
  end
  for _ = 1, math.min(jobs, total) do spawn_worker() end
  -- Everything that can make more work is a task in `pending`, so this waits for them all; a
  -- worker cancelled in the middle of an item raises, as it should.
  local waited = 1
  while waited <= #pending do
    pcall(pending[waited].wait, pending[waited])
    waited = waited + 1
  end
  finished = true
  -- A stop leaves retries queued (they end as they stood) and items never begun.
  for _, entry in ipairs(ready) do
    entry.status = "failed"
    finish(entry)
  end
  for index = next_index, total do
    local key = keys[index]
    if skip[key] then
      counts.skipped = counts.skipped + 1
      report.items[index] = { key = key, status = "skipped", attempts = 0, duration = 0 }
    else
      counts.not_run = counts.not_run + 1
      report.items[index] = { key = key, status = "not_run", attempts = 0, duration = 0 }
    end
  end

  if journal_error then
    -- Whatever else happened, the journal no longer says what ran.
    report.status, report.exit_code, report.journal_error = "journal_failed", 74, journal_error
  elseif stop == "cancelled" then
    report.status, report.exit_code, report.signal = "cancelled", 128 + signal, signal
  elseif stop == "timed_out" then
    report.status, report.exit_code = "timed_out", 3
  elseif stop == "halted" then
    report.status, report.exit_code = "halted", 4
  elseif counts.failed == 0 then
    report.status, report.exit_code = "succeeded", 0
  elseif counts.failed <= allowed then
    report.status, report.exit_code = "succeeded_with_failures", 0
  else
    report.status, report.exit_code = "failed", 4
  end
  report.tolerated = allowed
  report.ended = baton.date()
  report.duration = baton.now() - t0
  if next(report.failures_by_class) == nil then report.failures_by_class = nil end
  if total == 0 then report.items = baton.array{} end
  return report
end
