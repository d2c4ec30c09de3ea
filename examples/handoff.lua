-- Move what one device plays to another, and say how it went.
-- usage: baton run examples/handoff.lua [FROM] [TO]   (names, ids or host:port; add --peer HOST:PORT
-- for devices mDNS cannot see)
local from_name, to_name = arg[1] or "Phone", arg[2] or "Living Room TV"
local from = assert(baton.find(from_name, { timeout = 5 }))
local to = assert(baton.find(to_name, { timeout = 5 }))

-- Both answer baton.playback, whatever player is behind it (mpv, MPD, a Lua provider).
local now = baton.appservice.send(from, "baton.playback", { command = "state" }, { package = "org.example.player" })
if now and now.uri then
  print(("%s plays %s at %.2f s%s"):format(from.name, now.uri, now.position or 0, now.paused and " (paused)" or ""))
end

local status, report = baton.handoff(from, to, { source = "pause", timeout = 10 })
if status ~= "success" then
  io.stderr:write(("%s: %s\n"):format(status, report.detail or ""))
  baton.exit(1)
end
print(("%s now plays it from %.3f s; %s was paused at %.3f s"):format(
  to.name, report.position_at_target, from.name, report.position_at_source))
print(("position error %+.1f ms, overlap %.1f ms, %.0f ms from call to confirmed"):format(
  report.position_error_ms, report.overlap_ms or 0, report.latency_ms))
local phases = {}
for _, name in ipairs({ "find", "open", "read", "start", "confirm", "switch" }) do
  phases[#phases + 1] = ("%s %.1f"):format(name, report.phases[name] or 0)
end
print("phases (ms): " .. table.concat(phases, ", "))
