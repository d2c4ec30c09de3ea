-- The handoff: ask the phone what it is playing, and launch it on the TV at the same position.
-- usage: baton run examples/launch.lua   (the devices found over mDNS, or add --peer HOST:PORT for each)
local phone = assert(baton.find("Phone"))
local tv = assert(baton.find("Living Room TV"))

local playing, status = baton.appservice.send(phone, "com.example.playback", { Type = "now_playing" },
                                              { package = "org.example.player" })
if not playing then error("the phone did not say what it plays: " .. status, 0) end
print(("%s plays %s at %.1f s"):format(phone.name, playing.title, playing.position))

for _, app in ipairs(tv:apps()) do
  print(("%s has %s (%s)"):format(tv.name, app.name, table.concat(app.schemes, ", ")))
end

local launched, detail = baton.launch(tv, playing.uri, { app = "org.example.player", data = { position = playing.position } })
print(("launch on %s: %s %s"):format(tv.name, launched, detail))
if launched ~= "success" then baton.exit(1) end

baton.appservice.send(phone, "com.example.playback", { Type = "pause" }, { package = "org.example.player" })
print("paused on " .. phone.name)
