-- A speaker whose music plays through MPD: the agent talks to a running mpd over its TCP
-- protocol. MPD takes files under its music directory only, so the agent needs to know it.
device{ name = "Kitchen Speaker", kind = "speaker", model = "Cube", manufacturer = "Example" }

app{
  id = "org.example.music", name = "Music", schemes = { "file" },
  player = {
    backend = "mpd",
    address = os.getenv("BATON_DEMO_MPD") or "127.0.0.1:6600",
    music_directory = os.getenv("BATON_DEMO_MUSIC") or "/var/lib/mpd/music",
  },
}
