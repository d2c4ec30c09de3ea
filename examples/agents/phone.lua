-- The phone: a real mpv plays its media (headless here: no video, audio to nowhere), behind
-- the player app. The agent starts that mpv itself (or attaches to one already listening on
-- the socket), restarts it if it dies, and stops it when the agent stops. Every player app
-- answers baton.playback, the service handoffs use.
device{ name = "Phone", kind = "phone", model = "Pocket 7", manufacturer = "Example" }

local dir = os.getenv("BATON_DEMO_DIR") or "/tmp"

app{
  id = "org.example.player", name = "Player", schemes = { "file", "https" },
  player = { backend = "mpv", socket = dir .. "/phone-mpv.sock", args = { "--ao=null", "--no-video" } },
  services = {
    -- Rome's ping: Type, CreationDate, TargetId; the reply carries the same CreationDate.
    ["com.example.ping"] = function(msg, conn)
      return { Type = "pong", CreationDate = msg.CreationDate, TargetId = msg.TargetId }
    end,
  },
}
