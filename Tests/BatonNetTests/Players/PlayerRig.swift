import BatonAgent
import BatonClient
import BatonCore
import Foundation
import NIOCore
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The app id every test player goes by.
let playerApp = "org.example.player"

/// A loop for talking to players over their own sockets.
let playerLoop = MultiThreadedEventLoopGroup.singleton.next()

/// Test media made with sox in a directory of its own: `sweep.flac`, 60 s of a sine sweeping
/// from 100 Hz to 4100 Hz, so the pitch tells the position (and `a.flac`, `b.flac`, `c.flac`
/// copies for queues). sox's `100-4100` sweeps exponentially: 41 times the pitch in 60 s.
final class Media: Sendable {
    let directory: TemporaryDirectory
    var sweep: String { directory.file("sweep.flac") }
    func file(_ name: String) -> String { directory.file(name) }

    /// The sweep's frequency at `seconds`.
    static func frequency(at seconds: Double) -> Double { 100 * pow(41, seconds / 60) }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    /// Makes the media (sox runs as a child process, waited for without blocking a thread).
    static func make() async throws -> Media {
        let directory = try TemporaryDirectory("baton-media")
        let sox = try ChildProcess(
            "/usr/bin/sox", ["-n", "-r", "44100", "-c", "1", directory.file("sweep.flac"), "synth", "60", "sine", "100-4100"],
            environment: ChildProcess.environment([:]), stdout: directory.file("sox.out"), stderr: directory.file("sox.err"))
        guard await sox.exit.wait(within: 30) == 0 else {
            throw AgentFailure("sox could not make the test media: \(directory.read("sox.err") ?? "")")
        }
        for name in ["a.flac", "b.flac", "c.flac"] {
            try FileManager.default.copyItem(atPath: directory.file("sweep.flac"), toPath: directory.file(name))
        }
        return Media(directory: directory)
    }
}

/// An agent whose app `org.example.player` is backed by a player, and that player's own socket.
struct PlayerAgent {
    let agent: AgentProcess
    /// The mpv socket, for mpv players.
    let socket: String?

    var address: DeviceAddress { agent.address }
    var target: DeviceTarget { DeviceTarget(agent.address) }

    /// An agent named `name` with an mpv of its own (`args` added; `executable` to stand in
    /// for mpv), reachable once its mpv answers.
    static func mpv(
        _ name: String, kind: String = "tv", args: [String] = ["--ao=null", "--no-video"], executable: String = "mpv",
        in directory: TemporaryDirectory? = nil, waitForPlayer: Bool = true, wrapper: [String] = []
    ) async throws -> PlayerAgent {
        let directory = try directory ?? TemporaryDirectory("baton-player")
        let socket = directory.file("\(name.filter(\.isLetter))-mpv.sock")
        let list = args.map { "\"\($0)\"" }.joined(separator: ", ")
        let agent = try await AgentProcess.start(config: """
            device{ name = "\(name)", kind = "\(kind)" }
            app{ id = "\(playerApp)", name = "Player", schemes = {"file"},
                 player = { backend = "mpv", socket = "\(socket)", args = {\(list)}, executable = "\(executable)" } }
            """, directory: directory, wrapper: wrapper)
        if waitForPlayer {
            guard await eventually(within: 20, { (try? await MPVConnection.connect(path: socket, on: playerLoop).get())?.close() != nil }) else {
                throw AgentFailure("the agent's mpv did not listen on \(socket); its log:\n\(agent.log)")
            }
        }
        return PlayerAgent(agent: agent, socket: socket)
    }

    /// An agent named `name` whose player is the MPD at `port` with `music` as its music directory.
    static func mpd(_ name: String, port: Int, music: String, timeout: Double = 2) async throws -> PlayerAgent {
        let agent = try await AgentProcess.start(config: """
            device{ name = "\(name)", kind = "speaker" }
            app{ id = "\(playerApp)", name = "Music", schemes = {"file"},
                 player = { backend = "mpd", address = "127.0.0.1:\(port)", music_directory = "\(music)", timeout = \(timeout) } }
            """)
        return PlayerAgent(agent: agent, socket: nil)
    }

    /// An agent whose `baton.playback` is a Lua provider keeping time itself (see ``LuaPlayer``).
    static func lua(_ name: String, _ behaviour: LuaPlayer = .faithful) async throws -> PlayerAgent {
        let agent = try await AgentProcess.start(config: """
            device{ name = "\(name)", kind = "tv" }
            \(behaviour.source)
            app{ id = "\(playerApp)", name = "Lua player", services = { ["baton.playback"] = playback } }
            """)
        return PlayerAgent(agent: agent, socket: nil)
    }

    /// A connection to its mpv, straight to mpv's socket.
    func mpv() async throws -> MPVConnection {
        let connection = try await MPVConnection.connect(path: socket ?? "", on: playerLoop).get()
        try await playerLoop.submit { connection.callTimeout = .seconds(20) }.get()
        return connection
    }

    /// Asks its `baton.playback`.
    func playback(_ client: BatonClient, _ command: PlaybackCommand) async throws -> ValueDictionary {
        let reply = try await client.send(command.message, to: PlaybackCommand.service, app: playerApp, on: target, timeout: .seconds(20)).get()
        guard reply.status == .success, let message = reply.message else { throw AgentFailure("\(command): \(reply.status) \(reply.detail)") }
        if let failure = PlaybackFailure(message: message) { throw failure }
        return message
    }

    func stop() async {
        await agent.stop()
    }
}

/// A player written in Lua, as an app without mpv or MPD answers `baton.playback`: it keeps
/// its position from the monotonic clock. Some honour where they are told to start; some do
/// not (the ignored-offset failure), some ignore seeks too, some take their time to play.
enum LuaPlayer {
    case faithful
    case ignoresOffset
    case ignoresOffsetAndSeek
    case slow(seconds: Double)
    /// Plays, but will not pause or stop: its player answers `player_failed`.
    case refusesToPause

    var source: String {
        let ignoresOffset = self == .ignoresOffset || self == .ignoresOffsetAndSeek
        let ignoresSeek = self == .ignoresOffsetAndSeek
        let delay: Double = if case .slow(let seconds) = self { seconds } else { 0 }
        let refuses = if case .refusesToPause = self { true } else { false }
        return """
            local s = { paused = true, pos = 0, t0 = baton.now(), volume = 100 }
            local function position()
              if s.uri == nil then return nil end
              if s.paused then return s.pos end
              return s.pos + (baton.now() - s.t0)
            end
            local function state()
              return { uri = s.uri, position = position(), paused = s.paused, rate = 1.0, volume = s.volume,
                       queue = s.uri and {s.uri} or baton.array{}, index = s.uri and 0 or nil, at = baton.date() }
            end
            function playback(msg)
              local c = msg.command
              if c == "state" then return state() end
              if c == "play" then
                if \(delay) > 0 then baton.sleep(\(delay)) end
                s.uri = msg.uri or msg.queue[(msg.index or 0) + 1]
                s.pos = \(ignoresOffset ? "0" : "msg.position or 0")
                s.t0 = baton.now()
                s.paused = msg.paused or false
                return { position = position(), at = baton.date(), rate = (not s.paused) and 1.0 or nil }
              end
              if c == "seek" then
                if not \(ignoresSeek) then
                  s.pos = msg.by and (position() + msg.by) or msg.position
                  s.t0 = baton.now()
                end
                return state()
              end
              if \(refuses) and (c == "pause" or c == "stop") then
                return { error = "player_failed", detail = "the player would not " .. c }
              end
              if c == "pause" then s.pos = position() or 0; s.paused = true; return state() end
              if c == "resume" then s.t0 = baton.now(); s.paused = false; return state() end
              if c == "stop" then s.uri = nil; s.paused = true; return state() end
              if c == "volume" then s.volume = msg.level; return state() end
              if c == "mute" then return state() end
              return { error = "bad_request", detail = "unknown command " .. tostring(c) }
            end
            """
    }

    static func == (a: LuaPlayer, b: LuaPlayer) -> Bool {
        switch (a, b) {
        case (.faithful, .faithful), (.ignoresOffset, .ignoresOffset), (.ignoresOffsetAndSeek, .ignoresOffsetAndSeek): true
        default: false
        }
    }
}

/// A program that stands in for mpv (as the player's `executable`): it listens where mpv
/// would, and then misbehaves as `mode` says: `die-on-load` answers like an idle mpv and
/// exits when told to load a file; `garbage` answers everything with a line that is not
/// JSON; `silent` never answers.
func fakeMPV(_ mode: String, in directory: TemporaryDirectory) throws -> String {
    let path = directory.file("fake-mpv-\(mode)")
    try directory.write("fake-mpv-\(mode)", """
        #!/usr/bin/env python3
        import json, os, socket, sys
        path = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--input-ipc-server=")][0]
        if os.path.exists(path): os.unlink(path)
        server = socket.socket(socket.AF_UNIX); server.bind(path); server.listen(4)
        while True:
            conn, _ = server.accept()
            for line in conn.makefile("r"):
                if "\(mode)" == "silent": continue
                if "\(mode)" == "garbage":
                    conn.sendall(b"this is not mpv\\n"); continue
                request = json.loads(line)
                command = request["command"]
                if isinstance(command, dict) or command[0] == "loadfile": os._exit(1)
                answer = {"request_id": request.get("request_id", 0), "error": "success", "data": None}
                if command[0] == "get_property":
                    name = command[1]
                    if name in ("path", "time-pos", "duration", "media-title"): answer["error"] = "property unavailable"
                    else: answer["data"] = {"pause": False, "speed": 1.0, "volume": 100.0, "playlist": [], "playlist-pos": -1}.get(name)
                conn.sendall((json.dumps(answer) + "\\n").encode())
        """)
    chmod(path, 0o755)
    return path
}

/// A real mpd with a null output, its music directory `music`, on a free port.
final class RunningMPD: @unchecked Sendable {
    let port: Int
    let process: ChildProcess
    let connection: MPDConnection

    static func start(music: String, in directory: TemporaryDirectory) async throws -> RunningMPD {
        for _ in 1...3 {
            let port = try freeTCPPort()
            let config = directory.file("mpd-\(port).conf")
            try directory.write("mpd-\(port).conf", MPDConnection.headlessConfiguration(
                musicDirectory: music, stateDirectory: directory.path, port: port))
            let process = try ChildProcess(
                "/usr/bin/mpd", ["--no-daemon", config], environment: ChildProcess.environment([:]),
                stdout: directory.file("mpd-out"), stderr: directory.file("mpd-err"))
            var connection: MPDConnection?
            _ = await eventually(within: 10) {
                guard process.isRunning else { return true }
                connection = try? await MPDConnection.connect(host: "127.0.0.1", port: port, on: playerLoop).get()
                return connection != nil
            }
            guard let connection else {
                process.signal(SIGKILL)
                continue
            }
            try await playerLoop.submit { connection.callTimeout = .seconds(20) }.get()
            _ = try await connection.command("update").get()
            _ = await eventually(within: 20) { (try? await connection.command("status").get()["updating_db"]) == .some(nil) }
            return RunningMPD(port: port, process: process, connection: connection)
        }
        throw AgentFailure("mpd did not start: \(directory.read("mpd-err") ?? "")")
    }

    private init(port: Int, process: ChildProcess, connection: MPDConnection) {
        self.port = port
        self.process = process
        self.connection = connection
    }

    func stop() async {
        connection.close()
        process.signal(SIGTERM)
        if await process.exit.wait(within: 10) == nil {
            process.signal(SIGKILL)
            _ = await process.exit.wait(within: 5)
        }
    }
}

/// A TCP port nothing listens on a moment ago.
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw AgentFailure("no free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}
