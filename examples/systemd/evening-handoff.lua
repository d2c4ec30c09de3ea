-- The job evening-handoff.service runs: move the phone's playback to the TV, once a day.
-- Exit codes say what went wrong: 68 a device name nobody knows (a typo; the message suggests
-- the closest known names), 69 a known device that is switched off or off the network, 3 timeout.
local phone = baton.find("Phone", { required = true, timeout = 5 })
local tv = baton.find("Living Room TV", { required = true, timeout = 5 })
-- The key makes a retried run (systemd's restart, a second timer tick) not hand off twice.
local status, report = baton.handoff(phone, tv, { key = "evening-" .. os.date("%Y-%m-%d") })
if status == "nothing_playing" then
  baton.log.info("the phone plays nothing: nothing to do")
  return
end
baton.check(status, report.detail)
baton.log.info("handed off", report.uri, "at", report.position_at_target, report.repeated and "(already done today)" or "")
