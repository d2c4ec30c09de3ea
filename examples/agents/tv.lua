-- The living-room TV: a real mpv behind the player app, like the phone's. Launching a file:
-- URI on the app plays it (and answers success once mpv proves it plays).
device{ name = "Living Room TV", kind = "tv", model = "X-900", manufacturer = "Example" }

local dir = os.getenv("BATON_DEMO_DIR") or "/tmp"

app{
  id = "org.example.player", name = "Player", schemes = { "file", "https" },
  player = { backend = "mpv", socket = dir .. "/tv-mpv.sock", args = { "--ao=null", "--no-video" } },
  services = {
    ["com.example.ping"] = function(msg) return { Type = "pong", CreationDate = msg.CreationDate } end,
  },
}

-- Devices of other accounts (anonymous callers) may sign the guestbook, and reach nothing else.
app{
  id = "org.example.guestbook", name = "Guestbook", anonymous = true,
  services = { ["com.example.sign"] = function(msg) return { thanks = msg.name or "guest" } end },
}
