-- Reads a job list (JSON), runs the jobs concurrently, and writes a report (JSON):
-- the shape of a cron job or batch run.
-- usage: baton run examples/json-report.lua JOBS.json [REPORT.json]
local path = arg[1] or error("usage: baton run json-report.lua JOBS.json [REPORT.json]", 0)
local file = assert(io.open(path))
local jobs = baton.json.decode(file:read("a"))
file:close()

local function run(job)
  if type(job.uri) ~= "string" then error(("job %q has no uri"):format(job.name), 0) end
  baton.sleep(job.seconds or 0) -- stands in for the launch the device relay will do
  return { status = "success", took = job.seconds }
end

local started = baton.date()
local tasks = {}
for i, job in ipairs(jobs.jobs) do
  -- pcall inside the task: a failed job is a line in the report, not a failed run.
  tasks[i] = baton.spawn(function() return pcall(run, job) end)
end

local results = baton.array {}
for i, task in ipairs(tasks) do
  local ok, outcome = task:wait()
  local job = jobs.jobs[i]
  results[i] = { name = job.name, device = job.device,
                 status = ok and outcome.status or "failure", error = not ok and outcome or nil }
  baton.log.info(("%-16s %s"):format(job.name, results[i].status))
end

local report = { id = baton.uuid(), started = started, finished = baton.date(), jobs = results }
local text = baton.json.encode(report, { pretty = true })
if arg[2] then
  local out = assert(io.open(arg[2], "w"))
  out:write(text, "\n")
  out:close()
  print("report written to " .. arg[2])
else
  print(text)
end
