-- The smallest Baton script: arguments, a log line, and a typed message.
-- usage: baton run examples/hello.lua [NAME]
local baton = require "baton"

local who = arg[1] or "world"
print(("Hello, %s!"):format(who))
baton.log.info("started at", baton.date())

-- A message as app services will carry it: checked before it could ever leave the process.
local ping = baton.message {
  Type = "ping",
  CreationDate = baton.date(),
  TargetId = baton.uuid(),
  Hops = baton.array {},
}
print(baton.json.encode(ping, { pretty = true }))
