import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every command that talks to devices (`launch`, `send`, `describe`, `handoff`, `devices
/// --required`, and `run` and `batch` through Lua) against every failure kind that can be
/// made for real, with real agents as processes: each kind ends every command with one class
/// and one exit code, `--json` prints one object saying so, and the JSON log line of the
/// error carries the class.
@Suite("One class and exit code per failure, whichever command met it", .serialized, .timeLimit(.minutes(5)))
struct ExitCodeTableTests {
    /// A failure a user meets, and the class the README's table gives it.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case otherAccount = "a device of another account"
        case unreachable = "an address nothing answers at"
        case killedAgent = "an agent killed with -9"
        case missingApp = "an app the device does not have"
        case badRequest = "a request the player's service does not take"
        case playerFailed = "a player that is not running"
        case missingFile = "a file that is not there"
        case unknownDevice = "a device name nobody answers to"
        case timeout = "a device that accepts and never answers"

        var testDescription: String { rawValue }

        var errorClass: ErrorClass {
            switch self {
            case .otherAccount: .denied
            case .unreachable, .killedAgent, .missingApp: .unavailable
            case .badRequest, .playerFailed, .missingFile: .script
            case .unknownDevice: .notFound
            case .timeout: .timeout
            }
        }
    }

    /// One command line to run, and whether it prints one JSON object on stdout.
    struct Run {
        let label: String
        let arguments: [String]
        var jsonObject = true
    }

    @Test("every command that meets the failure ends with the same class and exit code", arguments: Kind.allCases)
    func table(kind: Kind) async throws {
        let fixture = try await Fixture.make(kind)
        do {
            #expect(fixture.runs.count >= 3, "a kind must be met by several commands to compare them")
            for run in fixture.runs {
                let result = try await runBaton(run.arguments + ["--log-format", "json"])
                check(result, run, kind)
            }
            for (label, script) in fixture.scripts {
                let result = try await runBaton(["run", "--log-format", "json", "--no-mdns", "--connect-timeout", fixture.connectTimeout, "-e", script])
                check(result, Run(label: "run: \(label)", arguments: [], jsonObject: false), kind)
            }
            if let job = fixture.batchJob {
                try await checkBatch(job: job, kind: kind)
            }
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("a failed request returns its status, why in words (the provider's own error) and, last, its cause; baton.check raises err.class and err.cause")
    func luaReturnValues() async throws {
        try await withAgent { agent in
            let own = agent.address.description
            let result = try await runBaton(["run", "--no-mdns", "-e", #"""
                print(baton.launch("127.0.0.1:1", "media:x"))
                print(baton.launch("\#(own)", "media:x", {app = "org.test.nope"}))
                print(baton.appservice.send("\#(own)", "broken", {x = 1}, {package = "\#(Fixtures.services)"}))
                print(baton.appservice.send("\#(own)", "echo", {x = 1}, {package = "org.test.nope"}))
                local conn, status, detail, cause = baton.appservice.open("127.0.0.1:1", "echo", {package = "x"})
                print(conn, status, cause)
                print(select("#", baton.launch("\#(own)", "media:x", {app = "\#(Fixtures.player)"})))
                print(baton.find("127.0.0.1:1"))
                local ok, err = pcall(baton.check, baton.launch("127.0.0.1:1", "media:x"))
                print(ok, err.class, err.cause)
                """#])
            #expect(result.code == 0, "\(result)")
            let lines = result.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            try #require(lines.count == 8, "\(result)")
            #expect(lines[0].first == "remote_system_unavailable" && lines[0].last == "unreachable", "\(result)")
            #expect(lines[1].first == "app_unavailable" && lines[1].last == "unavailable", "\(result)")
            #expect(lines[2].count == 4 && lines[2][0] == "nil" && lines[2][1] == "failure", "\(result)")
            #expect(lines[2][2].contains("the provider broke") && lines[2][3] == "failed", "the provider's error is the third value: \(result)")
            #expect(lines[3][1] == "failure" && lines[3][2].hasPrefix("the channel did not open: app_not_installed") && lines[3][3] == "unavailable", "\(result)")
            #expect(lines[4] == ["nil", "remote_system_unavailable", "unreachable"], "\(result)")
            #expect(lines[5] == ["2"], "a launch that succeeds returns status and detail only: \(result)")
            #expect(lines[6].first == "nil" && lines[6].dropFirst().first == "remote_system_unavailable" && lines[6].last == "unreachable", "\(result)")
            #expect(lines[7] == ["false", "unavailable", "unreachable"], "err.class and err.cause: \(result)")
        }
    }

    /// The exit code, the one JSON object on stdout and the JSON error line on stderr.
    private func check(_ result: CLIResult, _ run: Run, _ kind: Kind, sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = kind.errorClass
        #expect(result.code == expected.exitCode, "\(run.label) exited \(result.code), not \(expected.exitCode) (\(expected.rawValue))\n\(result)", sourceLocation: sourceLocation)
        if run.jsonObject {
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 1, "\(run.label): --json must print one object on stdout\n\(result)", sourceLocation: sourceLocation)
            let object = try? JSON.parse(result.stdout)
            #expect(object?["class"]?.stringValue == expected.rawValue, "\(run.label): the object's class\n\(result)", sourceLocation: sourceLocation)
            #expect(object?["exit_code"] == .int(Int64(expected.exitCode)), "\(run.label): the object's exit_code\n\(result)", sourceLocation: sourceLocation)
            #expect(object?["status"]?.stringValue?.isEmpty == false, "\(run.label): the object's status\n\(result)", sourceLocation: sourceLocation)
        }
        let errorLines = result.stderr.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }.filter { $0["level"]?.stringValue == "error" }
        #expect(errorLines.contains { $0["class"]?.stringValue == expected.rawValue },
                "\(run.label): no JSON error line with class \(expected.rawValue)\n\(result)", sourceLocation: sourceLocation)
        // Errors say what failed in words: no Swift insides, parentheses balanced.
        for text in [result.stdout, result.stderr] {
            #expect(!text.contains("Optional(") && !text.contains("errno:") && !text.contains("Failure(target:"), "\(run.label): \(text)", sourceLocation: sourceLocation)
            #expect(text.filter { $0 == "(" }.count == text.filter { $0 == ")" }.count, "\(run.label): unbalanced parentheses in \(text)", sourceLocation: sourceLocation)
        }
    }

    /// A batch of one item whose job meets the failure: the item's error has the kind's class
    /// (the batch itself exits 4, its own class, as `baton batch --help` says).
    private func checkBatch(job: String, kind: Kind) async throws {
        let directory = try TemporaryDirectory("baton-exit-table")
        try directory.write("job.lua", job)
        try directory.write("items.json", #"[{"key": "one"}]"#)
        let result = try await runBaton([
            "batch", directory.file("job.lua"), "--input", directory.file("items.json"), "--report", directory.file("report.json"),
            "--retries", "0", "--no-mdns", "--log-format", "json",
        ])
        #expect(result.code == ErrorClass.batch.exitCode, "batch: \(result)")
        let report = try #require(try? JSON.parse(directory.read("report.json") ?? ""), "batch: no report\n\(result)")
        let item = report["items"]?[0]
        #expect(item?["error"]?["class"]?.stringValue == kind.errorClass.rawValue, "batch: the item's class\n\(String(describing: item))\n\(result)")
    }

    /// The devices and command lines for one kind.
    struct Fixture {
        var runs: [Run] = []
        /// Lua chunks for `baton run -e`, by what they do.
        var scripts: [(String, String)] = []
        var batchJob: String?
        var connectTimeout = "3s"
        var keep: [AnyObject] = []
        var cleanUps: [() -> Void] = []

        var agents: [AgentProcess] = []

        /// Stops every agent and waits for it: one killed, or ended with the test process,
        /// would leave the mpv it started running.
        func stop() async {
            for cleanUp in cleanUps { cleanUp() }
            for agent in agents { await agent.stop() }
        }

        mutating func add(_ agent: AgentProcess) {
            agents.append(agent)
        }

        /// launch, describe, send (echo of the fixtures' services), handoff from `device` to
        /// `other`, each with `options`, and the same through Lua, all against `device`.
        mutating func everyCommand(_ device: String, other: String, options: [String] = []) {
            runs += [
                Run(label: "launch", arguments: ["launch", device, "media:x", "--app", Fixtures.player, "--json"] + options),
                Run(label: "describe", arguments: ["describe", device, "--json"] + options),
                Run(label: "send", arguments: ["send", device, "echo", "--app", Fixtures.services, "x=1", "--json-output"] + options),
                Run(label: "handoff", arguments: ["handoff", device, other, "--json"] + options),
            ]
            scripts += [
                ("baton.launch", #"baton.check(baton.launch("\#(device)", "media:x", {app = "\#(Fixtures.player)"}))"#),
                ("baton.appservice.send", #"baton.check(select(2, baton.appservice.send("\#(device)", "echo", {x = 1}, {package = "\#(Fixtures.services)"})))"#),
                ("baton.handoff", #"baton.check(baton.handoff("\#(device)", "\#(other)"))"#),
            ]
            batchJob = #"function job(item, ctx) baton.check(baton.launch("\#(device)", "media:" .. ctx.key, {app = "\#(Fixtures.player)"})) end"#
        }

        static func make(_ kind: Kind) async throws -> Fixture {
            var fixture = Fixture()
            switch kind {
            case .otherAccount:
                let stranger = try await AgentProcess.start(config: Fixtures.config, account: nil)
                fixture.add(stranger)
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                fixture.everyCommand(stranger.address.description, other: own.address.description)
                fixture.scripts.append(("baton.find", #"baton.find("\#(stranger.address)", {required = true})"#))

            case .unreachable:
                // TEST-NET-1: routed nowhere, or dropped; either way nothing answers.
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                fixture.connectTimeout = "500ms"
                fixture.everyCommand("192.0.2.1:47300", other: own.address.description, options: ["--connect-timeout", "500ms"])
                fixture.scripts.append(("baton.find", #"baton.find("192.0.2.1:47300", {required = true})"#))

            case .killedAgent:
                let killed = try await AgentProcess.start(config: Fixtures.config)
                await killed.stop(SIGKILL)
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                fixture.everyCommand(killed.address.description, other: own.address.description)
                fixture.scripts.append(("baton.find", #"baton.find("\#(killed.address)", {required = true})"#))

            case .missingApp:
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                let second = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(second)
                let device = own.address.description
                fixture.runs = [
                    Run(label: "launch", arguments: ["launch", device, "media:x", "--app", "org.test.nope", "--json"]),
                    Run(label: "send", arguments: ["send", device, "echo", "--app", "org.test.nope", "x=1", "--json-output"]),
                    Run(label: "handoff", arguments: ["handoff", device, second.address.description, "--app", "org.test.nope", "--json"]),
                ]
                fixture.scripts = [
                    ("baton.launch", #"baton.check(baton.launch("\#(device)", "media:x", {app = "org.test.nope"}))"#),
                    ("baton.appservice.send", #"baton.check(select(2, baton.appservice.send("\#(device)", "echo", {x = 1}, {package = "org.test.nope"})))"#),
                    ("baton.handoff", #"baton.check(baton.handoff("\#(device)", "\#(second.address)", {app = "org.test.nope"}))"#),
                ]
                fixture.batchJob = #"function job(item, ctx) baton.check(baton.launch("\#(device)", "media:x", {app = "org.test.nope"})) end"#

            case .badRequest, .playerFailed:
                // An MPD player whose MPD is not running (nothing listens at port 1): the
                // service checks a request before it touches the player.
                let music = try TemporaryDirectory("baton-exit-music")
                try music.write("song.flac", "not really flac")
                let mpd = try await PlayerAgent.mpd("No MPD", port: 1, music: music.path)
                fixture.add(mpd.agent)
                fixture.keep.append(music)
                let device = mpd.address.description
                if kind == .badRequest {
                    fixture.runs = [
                        Run(label: "send volume 300", arguments: ["send", device, PlaybackCommand.service, "--app", playerApp, "command=volume", "level=300", "--json-output"]),
                        Run(label: "send no command", arguments: ["send", device, PlaybackCommand.service, "--app", playerApp, "x=1", "--json-output"]),
                        Run(label: "send seek both", arguments: ["send", device, PlaybackCommand.service, "--app", playerApp, "command=seek", "position=1", "by=2", "--json-output"]),
                    ]
                } else {
                    let lua = try await PlayerAgent.lua("Lua Player")
                    fixture.add(lua.agent)
                    let song = music.file("song.flac")
                    fixture.runs = [
                        Run(label: "send state", arguments: ["send", device, PlaybackCommand.service, "--app", playerApp, "command=state", "--json-output"]),
                        Run(label: "launch", arguments: ["launch", device, "file://\(song)", "--app", playerApp, "--json"]),
                        Run(label: "handoff", arguments: ["handoff", device, lua.address.description, "--json"]),
                    ]
                    fixture.scripts = [
                        ("baton.launch", #"baton.check(baton.launch("\#(device)", "file://\#(song)", {app = "\#(playerApp)"}))"#),
                        ("baton.handoff", #"baton.check(baton.handoff("\#(device)", "\#(lua.address)"))"#),
                    ]
                    fixture.batchJob = #"function job(item, ctx) baton.check(baton.launch("\#(device)", "file://\#(song)", {app = "\#(playerApp)"})) end"#
                }

            case .missingFile:
                // A source that plays a file the target does not have (a Lua player says it
                // plays it), and a real mpv target.
                let missing = "/nonexistent/baton-exit-table/missing.flac"
                let source = try await PlayerAgent.lua("Lua Source")
                fixture.add(source.agent)
                let mpv = try await PlayerAgent.mpv("Mpv Target")
                fixture.add(mpv.agent)
                let played = try await runBaton(["send", source.address.description, PlaybackCommand.service, "--app", playerApp, "command=play", "uri=\(missing)"])
                #expect(played.code == 0, "the Lua source would not play: \(played)")
                let device = mpv.address.description
                fixture.runs = [
                    Run(label: "launch", arguments: ["launch", device, "file://\(missing)", "--app", playerApp, "--json"]),
                    Run(label: "send play", arguments: ["send", device, PlaybackCommand.service, "--app", playerApp, "command=play", "uri=\(missing)", "--json-output"]),
                    Run(label: "handoff", arguments: ["handoff", source.address.description, device, "--json"]),
                ]
                fixture.scripts = [
                    ("baton.launch", #"baton.check(baton.launch("\#(device)", "file://\#(missing)", {app = "\#(playerApp)"}))"#),
                    ("baton.handoff", #"baton.check(baton.handoff("\#(source.address)", "\#(device)"))"#),
                ]
                fixture.batchJob = #"function job(item, ctx) baton.check(baton.launch("\#(device)", "file://\#(missing)", {app = "\#(playerApp)"})) end"#

            case .unknownDevice:
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                let name = "No Such Device \(UUID().uuidString.prefix(8))"
                let quick = ["--no-mdns", "--connect-timeout", "500ms"]
                fixture.connectTimeout = "500ms"
                fixture.runs = [
                    Run(label: "launch", arguments: ["launch", name, "media:x", "--app", Fixtures.player, "--json"] + quick),
                    Run(label: "describe", arguments: ["describe", name, "--json"] + quick),
                    Run(label: "send", arguments: ["send", name, "echo", "--app", Fixtures.services, "x=1", "--json-output"] + quick),
                    Run(label: "handoff", arguments: ["handoff", name, own.address.description, "--json"] + quick),
                    Run(label: "devices --required", arguments: ["devices", "--required", "--kind", "xbox", "--no-mdns", "--timeout", "500ms"], jsonObject: false),
                ]
                fixture.scripts = [
                    ("baton.find", #"baton.find("\#(name)", {required = true, timeout = 0.5})"#),
                    ("baton.launch", #"baton.check(baton.launch("\#(name)", "media:x", {app = "\#(Fixtures.player)"}))"#),
                ]
                fixture.batchJob = #"function job(item, ctx) baton.find("\#(name)", {required = true, timeout = 0.5}) end"#

            case .timeout:
                let silent = try SilentListener()
                fixture.keep.append(silent)
                let own = try await AgentProcess.start(config: Fixtures.config)
                fixture.add(own)
                fixture.connectTimeout = "10s"
                let device = "127.0.0.1:\(silent.port)"
                let wait = ["--timeout", "500ms", "--connect-timeout", "10s"]
                fixture.runs = [
                    Run(label: "launch", arguments: ["launch", device, "media:x", "--app", Fixtures.player, "--json"] + wait),
                    Run(label: "describe", arguments: ["describe", device, "--json"] + wait),
                    Run(label: "send", arguments: ["send", device, "echo", "--app", Fixtures.services, "x=1", "--json-output"] + wait),
                    Run(label: "handoff", arguments: ["handoff", device, own.address.description, "--json"] + wait),
                ]
                fixture.scripts = [
                    ("baton.launch", #"baton.check(baton.launch("\#(device)", "media:x", {app = "\#(Fixtures.player)", timeout = 0.5}))"#),
                    ("baton.appservice.send", #"baton.check(select(2, baton.appservice.send("\#(device)", "echo", {x = 1}, {package = "\#(Fixtures.services)", timeout = 0.5})))"#),
                    ("baton.handoff", #"baton.check(baton.handoff("\#(device)", "\#(own.address)", {timeout = 0.5}))"#),
                ]
                fixture.batchJob = #"function job(item, ctx) baton.check(baton.launch("\#(device)", "media:x", {app = "\#(Fixtures.player)", timeout = 0.5})) end"#
            }
            return fixture
        }
    }
}

/// A TCP port on loopback that takes connections (the kernel completes them) and never says
/// a word: a device that accepts and never answers.
final class SilentListener: @unchecked Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw AgentFailure("cannot listen on loopback")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
