-- baton.player(dev [, app]): a player a script holds (see README, "Players in a script").
-- Written in Lua over baton.find, dev:apps and baton.appservice: each call is one request to
-- the device's baton.playback; handlers of "changed" hold a channel that watches (and keeps
-- the run going until p:close()), so a player nobody listens to holds nothing open.
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

-- An error in the script's call (level: 3 when raised by the function the script called).
local function fail(message, level) error("baton.player: " .. message, level or 3) end

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
  return setmetatable({ device = dev, app = app, handlers = { changed = {}, closed = {} } }, Player)
end

-- Opens the channel that watches: the agent sends it each change the player's own events
-- report. The state then, or nil, status, detail, cause.
local function watch(p)
  local conn, status, detail, cause = baton.appservice.open(p.device, SERVICE, { package = p.app })
  if not conn then return nil, status, detail, cause end
  p.conn = conn
  conn.on_request = function(msg)
    if msg.event == "changed" then
      for _, fn in ipairs(p.handlers.changed) do fn(msg.change, msg.state) end
    end
    return {}
  end
  conn.on_closed = function(why)
    p.conn = nil
    for _, fn in ipairs(p.handlers.closed) do fn(why) end
  end
  local reply, status2, detail2, cause2 = conn:send({ command = "watch" })
  if not reply or reply.error then
    -- Not watching: nothing is held open for it.
    p.conn = nil
    conn:close()
    if not reply then return nil, status2, detail2, cause2 end
  end
  return reply
end

-- Sends `msg`; the reply, or nil, status, detail, cause (a player's own `error` as the status).
function Player:_call(msg)
  local reply, status, detail, cause
  if self.conn then
    reply, status, detail, cause = self.conn:send(msg)
  else
    reply, status, detail, cause = baton.appservice.send(self.device, SERVICE, msg, { package = self.app })
  end
  if not reply then return nil, status, detail, cause end
  if reply.error then return nil, reply.error, reply.detail, CAUSES[reply.error] or "failed" end
  return reply
end

local function number(value, what, name)
  if type(value) ~= "number" then fail(name .. ": " .. what .. " must be a number, got " .. type(value), 4) end
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

-- p:on("changed", function(change, state) ... end) or p:on("closed", function(status) ... end)
-- (the watching channel closed: the agent stopped, say). The first "changed" handler opens
-- the channel that watches, and returns the state then (or nil, status, detail, cause).
function Player:on(event, fn)
  if not EVENTS[event] then fail("p:on: event must be \"changed\" or \"closed\", got " .. tostring(event)) end
  if type(fn) ~= "function" then fail("p:on: handler must be a function, got " .. type(fn)) end
  local list = self.handlers[event]
  list[#list + 1] = fn
  if event == "changed" and not self.conn then
    local reply, status, detail, cause = watch(self)
    if reply and reply.error then
      status, detail, cause = reply.error, reply.detail, CAUSES[reply.error] or "failed"
      reply = nil
    end
    if not reply then
      list[#list] = nil
      return nil, status, detail, cause
    end
    return reply
  end
  return true
end

-- Stops watching: the handlers hear no more, and the run no longer waits for them.
function Player:close()
  if self.conn then self.conn:close() end
  self.conn = nil
end

function Player:__tostring() return "player " .. self.app .. " on " .. tostring(self.device) end
