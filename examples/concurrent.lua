-- Spawned tasks interleave: each sleeps between its steps, and none blocks the others.
-- usage: baton run examples/concurrent.lua
local started = baton.now()
local function stamp() return ("%5.0f ms"):format((baton.now() - started) * 1000) end

local function device(name, steps, pause)
  for i = 1, steps do
    print(stamp(), ("%-8s step %d/%d"):format(name, i, steps))
    baton.sleep(pause)
  end
  return name .. " finished", steps
end

local tasks = {
  baton.spawn(device, "phone", 3, 0.10),
  baton.spawn(device, "tv", 2, 0.15),
  baton.spawn(device, "speaker", 4, 0.05),
}

local ticks = 0
local heartbeat = baton.every(0.1, function() ticks = ticks + 1 end)

for _, task in ipairs(tasks) do
  local what, steps = task:wait()
  print(stamp(), what, "after " .. steps .. " steps")
end
heartbeat:stop()

-- An error in a task reaches whoever waits for it, as an ordinary Lua error.
local lookup = baton.spawn(function()
  baton.sleep(0.01)
  return baton.message { device = "kitchen", volume = 11 }
end)
print(stamp(), "kitchen volume:", lookup:wait().volume)
print(stamp(), ("all done; the heartbeat ticked %d times"):format(ticks))
