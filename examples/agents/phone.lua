-- The phone: plays media, and tells anyone who asks what it is playing.
device{ name = "Phone", kind = "phone", model = "Pocket 7", manufacturer = "Example" }

local now_playing = { title = "The Film", position = 83.5, uri = "media://film?t=83" }

app{
  id = "org.example.player", name = "Player", schemes = { "media" },
  launch = function(uri, data)
    baton.log.info("phone plays", uri)
    now_playing.uri = uri
    return "success"
  end,
  services = {
    -- Rome's ping: Type, CreationDate, TargetId; the reply carries the same CreationDate.
    ["com.example.ping"] = function(msg, conn)
      return { Type = "pong", CreationDate = msg.CreationDate, TargetId = msg.TargetId }
    end,
    ["com.example.playback"] = function(msg, conn)
      if msg.Type == "now_playing" then return now_playing end
      if msg.Type == "pause" then now_playing.paused = true return { paused = true } end
      return nil, "failure"
    end,
  },
}
