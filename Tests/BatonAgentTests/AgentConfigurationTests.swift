@testable import BatonAgent
import BatonCore
import Testing

@Suite("The agent's Lua configuration: device{}, handler{}, app{}")
struct AgentConfigurationTests {
    @Test("a full configuration is read as written")
    func fullConfiguration() async throws {
        let agent = try await startAgent("""
            device{ name = "Living Room TV", kind = "tv", model = "X-900", manufacturer = "Example" }
            handler{ scheme = "HTTPS", run = {"xdg-open", "{uri}"} }
            app{ id = "org.example.player", name = "Player", schemes = {"media", "https"},
                 launch = function(uri, data) return "success" end,
                 services = { ["com.example.playback"] = function(msg, conn) return msg end },
                 attributes = { tier = "living-room", volume = 3 }, anonymous = true }
            app{ id = "org.example.tools", services = { ping = function() return {} end } }
            """)
        defer { agent.stop() }
        let c = agent.configuration
        #expect(c.device.name == "Living Room TV" && c.device.kind == .tv && c.device.model == "X-900" && c.device.manufacturer == "Example")
        #expect(c.handlers["https"]?.command.elements == ["xdg-open", "{uri}"])
        #expect(c.apps.map(\.info.id) == ["org.example.player", "org.example.tools"])
        let player = try #require(c.app("org.example.player"))
        #expect(player.info.name == "Player" && player.info.schemes == ["media", "https"] && player.info.anonymous)
        #expect(player.info.services == ["com.example.playback"])
        #expect(player.info.attributes == ["tier": .string("living-room"), "volume": .int(3)])
        #expect(c.app("org.example.tools")?.info.name == "org.example.tools")
    }

    @Test("each mistake stops the agent with file:line: message", arguments: [
        ("device{ nmae = 'x' }", "agent.lua:1: device: unknown field 'nmae' (fields: id, kind, manufacturer, model, name)"),
        ("device{ name = 'x', kind = 'fridge' }", "agent.lua:1: device: kind must be one of desktop, laptop, phone, tablet, tv, xbox, speaker, hub, iot, holographic, unknown, got \"fridge\""),
        ("device 'x'", "agent.lua:1: device: expected a table, as in device{ ... }, got string"),
        ("device{ name = 'TV' }\ndevice{ name = 'Kitchen' }", "agent.lua:2: device: given twice (first at agent.lua:1); one device{ ... } describes the device"),
        ("app{ id = 'a', player = { backend = 'mpd', on_stop = 'quit' } }", "agent.lua:1: app a: player: on_stop must be one of \"leave\", \"pause\", \"stop\""),
        ("device{ name = 42 }", "agent.lua:1: device: name must be a string, got number"),
        ("handler{ scheme = 'https' }", "agent.lua:1: handler: run = {argv...} is required"),
        ("handler{ scheme = 'no scheme', run = {'x'} }", "agent.lua:1: handler: scheme must be a URI scheme such as \"https\""),
        ("handler{ scheme = 'x', run = {} }", "agent.lua:1: handler: run: the argv list needs at least the program to run"),
        ("\napp{ name = 'x' }", "agent.lua:2: app: id is required"),
        ("app{ id = 'a', schemes = {'x'} }", "agent.lua:1: app a: it takes schemes, so it needs launch = function or run = {argv...}"),
        ("app{ id = 'a', schemes = {'x'}, run = {'x'}, launch = print }", "agent.lua:1: app a: give launch = function or run = {argv...}, not both"),
        ("app{ id = 'a' } app{ id = 'a' }", "agent.lua:1: app: a is already defined"),
        ("app{ id = 'a', services = { s = 'not a function' } }", "agent.lua:1: app: services must map service names to functions, got a string"),
        ("app{ id = 'a', schemes = {1} , run = {'x'} }", "agent.lua:1: app: schemes[1] must be a string, got number"),
        ("app{ id = 'a', attributes = { list = {1, 'x'} } }", "agent.lua:1: app: attributes.list[2]: expected number like list[1], got string"),
        ("app{ id = 'a', player = { backend = 'vlc' } }", "agent.lua:1: app a: player: backend must be one of \"mpv\", \"mpd\", \"kodi\", \"mpris\", got \"vlc\""),
        ("app{ id = 'a', player = {} }", "agent.lua:1: app a: player: backend must be one of \"mpv\", \"mpd\", \"kodi\", \"mpris\", got nothing"),
        ("app{ id = 'a', player = { backend = 'mpv', sockett = '/x' } }", "agent.lua:1: app a: player: unknown field 'sockett' (fields: args, backend, executable, on_stop, socket)"),
        ("app{ id = 'a', player = { backend = 'mpv', args = {1} } }", "agent.lua:1: app a: player: args must be a list of strings"),
        ("app{ id = 'a', player = { backend = 'mpv', socket = '/' .. string.rep('s', 120) } }", "agent.lua:1: app a: player: socket path is too long for a Unix socket (at most 100 bytes)"),
        ("app{ id = 'a', player = { backend = 'mpd', address = 'nowhere' } }", "agent.lua:1: app a: player: address must be host:port, got \"nowhere\""),
        ("app{ id = 'a', player = { backend = 'mpd', socket = '/x' } }", "agent.lua:1: app a: player: unknown field 'socket' (fields: address, backend, music_directory, on_stop, timeout)"),
        ("app{ id = 'a', player = { backend = 'mpd', timeout = 0 } }", "agent.lua:1: app a: player: timeout must be a number of seconds above 0 and at most 600"),
        ("app{ id = 'a', player = { backend = 'mpd', timeout = '5' } }", "agent.lua:1: app a: player: timeout must be a number of seconds above 0 and at most 600"),
        ("app{ id = 'a', player = 'mpv' }", "agent.lua:1: app: player must be a table, got string"),
        ("app{ id = 'a', player = { backend = 'mpd' }, services = { ['baton.playback'] = print } }", "agent.lua:1: app a: its player answers baton.playback; give a player or a provider of it, not both"),
        ("error('broken')", "agent.lua:1: broken"),
        ("x = = 1", "agent.lua:1: unexpected symbol near '='"),
    ])
    func mistakes(config: String, expected: String) async {
        #expect(await configurationError(config) == expected)
    }

    @Test("an app with a player answers baton.playback, and a player app without launch plays what it is launched with")
    func playerApps() async throws {
        let agent = try await startAgent("""
            app{ id = "org.example.music", schemes = {"file"},
                 player = { backend = "mpd", address = "127.0.0.1:1", music_directory = "/srv/music", timeout = 5.5 },
                 services = { ping = function() return {} end } }
            """)
        defer { agent.stop() }
        let app = try #require(agent.configuration.app("org.example.music"))
        #expect(app.info.services == ["baton.playback", "ping"])
        let mpd = try #require(app.player?.backend as? MPDBackend, "the player is \(app.player?.kind ?? "none")")
        #expect(mpd.address.host == "127.0.0.1" && mpd.address.port == 1 && mpd.musicDirectory == "/srv/music" && mpd.timeout == 5.5)
        guard case .player = app.launch else { Issue.record("launch is \(app.launch), not the player"); return }
        // The channel opens whether or not MPD answers yet: the player is reached when asked.
        #expect(agent.openStatus(app: "org.example.music", service: "baton.playback").0 == .success)
    }
}
