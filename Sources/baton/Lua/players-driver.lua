-- baton players: what plays where (see PlayersCommand). The options come as one JSON object:
-- device (a name, id or host:port; nil: every device found), watch, json, timeout (seconds).
local options = baton.json.decode((...))

local function out(line) io.stdout:write(line, "\n") io.stdout:flush() end

local function clock(seconds)
  if seconds == nil then return "-" end
  local s = math.floor(seconds)
  return string.format("%d:%02d.%01d", s // 60, s % 60, math.floor((seconds - s) * 10))
end

-- One line of text for a player's state.
local function text(dev, app, state, change)
  local doing = not state.uri and "idle" or state.paused and "paused" or "playing"
  local where = state.uri and (clock(state.position) .. "/" .. clock(state.duration)) or "-"
  local fields = { tostring(dev), app, change or doing, where, state.uri or "-" }
  if change then table.insert(fields, 4, doing) end
  return table.concat(fields, "\t")
end

local function json(dev, app, state, event)
  local object = { device = { id = dev.id, name = dev.name }, app = app, state = state }
  if event then object.event = event.event object.change = event.change end
  return baton.json.encode(object)
end

-- The apps of `dev` that answer baton.playback, each as a player; or nil and why.
local function players(dev)
  local apps, status, detail = dev:apps()
  if not apps then return nil, status .. ": " .. tostring(detail) end
  local found = {}
  for _, app in ipairs(apps) do
    for _, service in ipairs(app.services) do
      if service == "baton.playback" then found[#found + 1] = assert(baton.player(dev, app.id)) end
    end
  end
  return found
end

local listed = {}

-- Prints each player of `dev` (as `event` when watching); with --watch, follows its changes.
local function show(dev, event)
  local found, why = players(dev)
  if not found then
    baton.log.warn(tostring(dev) .. ": " .. why)
    return
  end
  for _, p in ipairs(found) do
    -- Watching, the state printed is the one the watch began with: no change after it is missed.
    local state, status, detail
    if options.watch then
      state, status, detail = p:on("changed", function(change, now)
        if options.json then
          out(json(dev, p.app, now, { event = "changed", change = change }))
        else
          out(text(dev, p.app, now, change))
        end
      end)
    else
      state, status, detail = p:state()
    end
    if not state then
      baton.log.warn(tostring(p) .. ": " .. tostring(status) .. ": " .. tostring(detail))
    elseif options.json and not options.watch then
      listed[#listed + 1] = { device = { id = dev.id, name = dev.name }, app = p.app, state = state }
    elseif options.json then
      out(json(dev, p.app, state, { event = event }))
    else
      out(text(dev, p.app, state, options.watch and event or nil))
    end
  end
end

local seen = {}
if options.device then
  show(baton.find(options.device, { required = true }), "added")
else
  for _, dev in ipairs(baton.devices(nil, { timeout = options.timeout })) do
    seen[dev.id] = true
    show(dev, "added")
  end
end
if options.json and not options.watch then out(baton.json.encode(baton.array(listed))) end
if options.watch and not options.device then
  -- Devices that come later are shown and followed as they come.
  baton.watch(nil, {
    added = function(dev)
      if not seen[dev.id] then
        seen[dev.id] = true
        show(dev, "added")
      end
    end,
  })
end
