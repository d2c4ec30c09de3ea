-- The living-room TV: its player launches whatever URI it is handed. Here the "player" is a
-- command that writes what it was asked to play to a file (BATON_DEMO_OUT), so the demo can
-- show it; on a real TV it would be mpv or a browser.
device{ name = "Living Room TV", kind = "tv", model = "X-900", manufacturer = "Example" }

local out = os.getenv("BATON_DEMO_OUT") or "/tmp/baton-demo-tv.txt"

app{
  id = "org.example.player", name = "Player", schemes = { "media", "https" },
  -- argv, never a shell: the URI and the position arrive as arguments of their own.
  run = { "sh", "-c", 'printf "now playing %s from %s s\n" "$1" "$2" > "$3"', "sh", "{uri}", "{data.position}", out },
  services = {
    ["com.example.ping"] = function(msg) return { Type = "pong", CreationDate = msg.CreationDate } end,
  },
}

-- Devices of other accounts (anonymous callers) may sign the guestbook, and reach nothing else.
app{
  id = "org.example.guestbook", name = "Guestbook", anonymous = true,
  services = { ["com.example.sign"] = function(msg) return { thanks = msg.name or "guest" } end },
}
