-- baton.player(dev [, app]): a player a script holds (see README, "Players in a script").
-- Written in Lua over baton.find, dev:apps and baton.appservice: it is a channel to the
-- device's baton.playback and a table of handlers, nothing the host needs to know.
local baton = ...
local SERVICE = "baton.playback"
local EVENTS = { changed = true, closed = true }

-- What a player's `error` becomes as a cause (the class and exit code follow from it).
local CAUSES = {
  cannot_open = "media_unavailable", did_not_play = "player_failed",
  player_failed = "player_failed", bad_request = "bad_request",
}

local Player = {}
Player.__index = Player
Player.__name = "baton.player"

local function fail(message) error("baton.player: " .. message, 3) end

-- The first app of `dev` that answers baton.playback; or nil, status, detail, cause.
local function player_app(dev)
  local apps, status, detail, cause = dev:apps()
  if not apps then return nil, status, detail, cause end
  for _, app in ipairs(apps) do
    for _, service in ipairs(app.services) do
      if service == SERVICE then return app.id end
    end
  end
  return nil, "app_not_installed", tostring(dev) .. " has no app that answers " .. SERVICE, "not_found"
end

function baton.player(dev, app)
  if type(dev) == "string" then
    local found, status, detail, cause = baton.find(dev)
    if not found then return nil, status, detail, cause end
    dev = found
  elseif type(dev) ~= "table" then
    fail("device expected (a device from baton.find, a name, an id or \"host:port\"), got " .. type(dev))
  end
  if app ~= nil and type(app) ~= "string" then fail("app must be an app id (a string), got " .. type(app)) end
  if app == nil then
    local found, status, detail, cause = player_app(dev)
    if not found then return nil, status, detail, cause end
    app = found
  end
  local conn, status, detail, cause = baton.appservice.open(dev, SERVICE, { package = app })
  if not conn then return nil, status, detail, cause end
  local p = setmetatable({ device = dev, app = app, conn = conn, handlers = { changed = {}, closed = {} } }, Player)
  -- The agent tells a watching channel each change the player's own events report.
  conn.on_request = function(msg)
    if msg.event == "changed" then
      for _, fn in ipairs(p.handlers.changed) do fn(msg.change, msg.state) end
    end
    return {}
  end
  conn.on_closed = function(why)
    for _, fn in ipairs(p.handlers.closed) do fn(why) end
  end
  return p
end

-- Sends `msg`; the reply, or nil, status, detail, cause (a player's own `error` as the status).
function Player:_call(msg)
  local reply, status, detail, cause = self.conn:send(msg)
  if not reply then return nil, status, detail, cause end
  if reply.error then return nil, reply.error, reply.detail, CAUSES[reply.error] or "failed" end
  return reply
end

local function number(value, what, name)
  if type(value) ~= "number" then fail(name .. ": " .. what .. " must be a number, got " .. type(value)) end
  return value
end

function Player:state() return self:_call({ command = "state" }) end
function Player:pause() return self:_call({ command = "pause" }) end
function Player:resume() return self:_call({ command = "resume" }) end
function Player:stop() return self:_call({ command = "stop" }) end
function Player:seek(s) return self:_call({ command = "seek", position = number(s, "position", "p:seek") }) end
function Player:seek_by(d) return self:_call({ command = "seek", by = number(d, "offset", "p:seek_by") }) end
function Player:volume(v) return self:_call({ command = "volume", level = number(v, "level", "p:volume") }) end
function Player:mute(muted)
  if muted == nil then muted = true end
  if type(muted) ~= "boolean" then fail("p:mute: muted must be true or false, got " .. type(muted)) end
  return self:_call({ command = "mute", muted = muted })
end

-- p:play(uri | {uri, ...} [, {position =, index =, paused =, volume =, muted =}]): the proof.
function Player:play(what, opts)
  local msg = { command = "play" }
  if type(what) == "string" then
    msg.uri = what
  elseif type(what) == "table" then
    msg.queue = baton.array(what)
  else
    fail("p:play: a URI or a list of URIs expected, got " .. type(what))
  end
  if opts ~= nil then
    if type(opts) ~= "table" then fail("p:play: options must be a table, got " .. type(opts)) end
    for key, value in pairs(opts) do
      if key ~= "position" and key ~= "index" and key ~= "paused" and key ~= "volume" and key ~= "muted" then
        fail("p:play: unknown option '" .. tostring(key) .. "' (options: index, muted, paused, position, volume)")
      end
      msg[key] = value
    end
  end
  return self:_call(msg)
end

-- p:on("changed", function(change, state) ... end) or p:on("closed", function(status) ... end).
-- The first "changed" handler asks the agent to watch; the state it answers is returned.
function Player:on(event, fn)
  if not EVENTS[event] then fail("p:on: event must be \"changed\" or \"closed\", got " .. tostring(event)) end
  if type(fn) ~= "function" then fail("p:on: handler must be a function, got " .. type(fn)) end
  local list = self.handlers[event]
  list[#list + 1] = fn
  if event == "changed" and #list == 1 then return self:_call({ command = "watch" }) end
  return true
end

function Player:close() self.conn:close() end

function Player:__tostring() return "player " .. self.app .. " on " .. tostring(self.device) end
