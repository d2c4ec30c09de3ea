-- Follow me: when a TV or a speaker appears, move what the phone plays to it; when that
-- device goes away, move it back to the phone, from where the device had got to. Runs until
-- stopped (or --timeout).
-- usage: baton run examples/follow-me.lua [PHONE]   (add --peer HOST:PORT for devices mDNS cannot see)
local phone_name = arg[1] or "Phone"
local phone = assert(baton.find(phone_name, { timeout = 5 }), "no device named " .. phone_name)
local here = nil -- the device that plays now, when it is not the phone
local last = nil -- what it played when last asked, and when (baton.now())

local function move(from, to, why)
  local status, report = baton.handoff(from, to, { timeout = 10 })
  if status == "success" then
    print(("%s: %s -> %s at %.2f s (error %+.0f ms)"):format(why, from.name, to.name,
      report.position_at_target, report.position_error_ms or 0))
    return true
  end
  print(("%s: %s -> %s did not happen: %s %s"):format(why, from.name, to.name, status, report.detail or ""))
  return false
end

-- While a device plays for us, remember where it is: once it is gone, nobody can ask it.
baton.spawn(function()
  while true do
    if here then
      local state = baton.appservice.send(here, "baton.playback", { command = "state" },
                                          { package = here.app, timeout = 2 })
      if state and state.uri then last = { uri = state.uri, position = state.position, paused = state.paused, t = baton.now() } end
    end
    baton.sleep(0.5)
  end
end)

baton.watch(baton.filter{ kind = { "tv", "speaker" } }, {
  added = function(dev)
    if here ~= nil then return end
    if move(phone, dev, dev.name .. " appeared") then
      for _, app in ipairs(dev:apps()) do
        for _, service in ipairs(app.services) do
          if service == "baton.playback" and not dev.app then dev.app = app.id end
        end
      end
      here = dev
    end
  end,
  removed = function(dev)
    if here == nil or here.id ~= dev.id then return end
    here = nil
    if last == nil then return end
    local position = last.position + (last.paused and 0 or baton.now() - last.t)
    local reply, status = baton.appservice.send(phone, "baton.playback",
      { command = "play", uri = last.uri, position = position, paused = last.paused },
      { package = "org.example.player", timeout = 10 })
    print(("%s went away: back to %s at %.2f s (%s)"):format(dev.name, phone.name, position,
      reply and (reply.error or "playing") or status))
    last = nil
  end,
  error = function(err) print("discovery: " .. tostring(err)) end,
})
