local options, context, items_text = ...
options = baton.json.decode(options)
context = baton.json.decode(context)
local script, input, journal, report_path = context.script, context.input, context.journal, context.report
-- The policy as given, for the report, before the driver adds what only it needs.
local policy = baton.json.decode(baton.json.encode(options))
-- What keeps the batch from starting is a usage error: said in one line, exit 2.
local function refuse(message) io.stderr:write(message, "\n") baton.exit(2) end
local chunk, problem = loadfile(script)
if not chunk then refuse(problem) end
chunk()
if type(job) ~= "function" then refuse(script .. " defines no function job(item, ctx)") end
if options.in_doubt_policy == "check" then
  if type(verify) ~= "function" then refuse("--in-doubt check needs " .. script .. " to define verify(item, ctx)") end
  options.verify = verify
end

-- The items (read by baton batch from --input: a JSON array, JSON lines or CSV) and the
-- journal (opened, locked and read by baton batch: what to skip, what is in doubt).
local items = baton.json.decode(items_text)
options.id = context.batch_id
if journal ~= "" then
  local function set(keys)
    local s = {}
    for _, key in ipairs(keys) do s[key] = true end
    return s
  end
  options.journal, options.skip, options.in_doubt = journal, set(context.skip), set(context.in_doubt)
end
local script_sha, input_sha = context.script_sha256, context.input_sha256

-- Progress on stderr: a bar redrawn in place on a terminal, else a line every few seconds.
local style = context.progress
-- A bar shows at once; a plain line first after its interval.
local last_shown = (style == "lines" or style == "json") and 0 or nil
local function eta_text(seconds)
  if not seconds then return "?" end
  if seconds >= 3600 then return ("%dh%02dm"):format(seconds // 3600, seconds % 3600 // 60) end
  if seconds >= 60 then return ("%dm%02ds"):format(seconds // 60, seconds % 60) end
  return ("%ds"):format(math.ceil(seconds))
end
if style ~= "none" then
  options.progress = function(c, elapsed)
    local bar = style == "bar" or style == "bar-plain"
    if last_shown and elapsed - last_shown < (bar and 0.2 or 5) then return end
    last_shown = elapsed
    local done = c.succeeded + c.failed + c.skipped + c.in_doubt
    local eta = done > c.skipped and elapsed / (done - c.skipped) * (c.total - done) or nil
    if bar then
      local width = 30
      local filled = c.total > 0 and width * done // c.total or width
      local failed = ("%d failed"):format(c.failed)
      if style == "bar" and c.failed > 0 then failed = "\27[31m" .. failed .. "\27[0m" end
      io.stderr:write(("\r[%s%s] %d/%d  %s  ETA %s\27[K"):format(string.rep("#", filled), string.rep("-", width - filled),
        done, c.total, failed, eta_text(eta)))
    elseif style == "json" then
      io.stderr:write(baton.json.encode({ kind = "progress", batch = options.id, done = done, total = c.total,
        failed = c.failed, elapsed = elapsed, eta = eta }), "\n")
    else
      io.stderr:write(("batch: %d/%d done, %d failed, %.0f s, ETA %s\n"):format(done, c.total, c.failed, elapsed, eta_text(eta)))
    end
  end
end
options.signals = true

local report = baton.batch(items, job, options)
if last_shown and (style == "bar" or style == "bar-plain") then io.stderr:write("\r\27[K") end

-- The command that runs what is left: the failures, and what never ran or was left in doubt.
local function quote(word)
  if word:match("^[%w@%%+=:,./_-]+$") then return word end
  return "'" .. word:gsub("'", "'\\''") .. "'"
end
local c = report.counts
if c.failed + c.in_doubt + c.not_run > 0 and journal ~= "" then
  local words = {}
  for _, word in ipairs(context.command_line) do
    if word ~= "--resume" and word ~= "--retry-failed" then words[#words + 1] = quote(word) end
  end
  words[#words + 1] = "--retry-failed"
  report.retry_command = table.concat(words, " ")
end
report.script, report.input = script, input
report.script_sha256, report.input_sha256 = script_sha, input_sha
report.command_line, report.host, report.version = context.command_line, context.host, context.version
report.policy = policy
report.run_id = context.run_id
-- A report that cannot be written fails the batch (exit 74), saying why.
local report_error
if report_path ~= "" then
  local out, problem = io.open(report_path, "w")
  if out then
    local written, write_problem = out:write(baton.json.encode(report, { pretty = true }), "\n")
    local closed, close_problem = out:close()
    problem = (not written and write_problem) or (not closed and close_problem) or nil
  end
  if problem then
    report_error = ("cannot write the report %s: %s"):format(report_path, problem)
    -- A report cut short must not pass for one.
    if out then os.remove(report_path) end
  end
end
io.stderr:write(("batch %s: %s, %d items: %d succeeded (%d changed), %d failed, %d retries, %d skipped, %d in doubt, %d not run, %.1f s\n"):format(
  report.id, report.status, c.total, c.succeeded, c.changed, c.failed, c.retried, c.skipped, c.in_doubt, c.not_run, report.duration))
for _, item in ipairs(report.items) do
  if item.status == "failed" then
    io.stderr:write(("  %s: %s: %s\n"):format(item.key, item.error.class, item.error.message))
  end
end
if report.retry_command then
  io.stderr:write("to run what is left: ", report.retry_command, "\n")
elseif c.failed + c.in_doubt + c.not_run > 0 then
  io.stderr:write("(with --journal DIR, --retry-failed would run what is left)\n")
end
if report.journal_error then
  io.stderr:write("error: ", report.journal_error, ": the batch stopped (nothing new started) and failed\n")
end
if report_error then io.stderr:write("error: ", report_error, "\n") end
baton.exit((report.journal_error or report_error) and 74 or report.exit_code)
