-- Rome's ping: open an app-service channel, send Type/CreationDate/TargetId, and print the
-- round-trip time from the CreationDate the service sends back.
-- usage: baton run examples/ping.lua [DEVICE] [COUNT]   (found over mDNS, or add --peer HOST:PORT)
local target = arg[1] or "Phone"
local count = tonumber(arg[2] or "3")

local device, why = baton.find(target)
if not device then error(("cannot find %s: %s"):format(target, why), 0) end

local conn, status = baton.appservice.open(device, "com.example.ping", { package = "org.example.player" })
if not conn then error(("cannot open com.example.ping on %s: %s"):format(device.name, status), 0) end

for i = 1, count do
  local started = baton.now()
  local reply, rstatus = conn:send { Type = "ping", CreationDate = baton.date(), TargetId = device.id }
  if not reply then error("ping failed: " .. rstatus, 0) end
  print(("ping %d to %s: %s, %.2f ms"):format(i, device.name, reply.Type, (baton.now() - started) * 1000))
end
conn:close()
