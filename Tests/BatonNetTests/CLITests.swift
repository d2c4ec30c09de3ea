import BatonClient
import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one run of `baton` left behind.
struct CLIResult: CustomStringConvertible {
    var code: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(code)\n--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)---" }

    /// Standard output parsed as one JSON document.
    func json(sourceLocation: SourceLocation = #_sourceLocation) -> JSON? {
        do {
            return try JSON.parse(stdout)
        } catch {
            Issue.record("stdout is not JSON (\(error)):\n\(self)", sourceLocation: sourceLocation)
            return nil
        }
    }
}

/// Runs `baton ARGS...` to completion (killing it after 20 s, which fails the test), as the
/// holder of the shared test account, or with `xdg` as its XDG_CONFIG_HOME.
func runBaton(_ arguments: [String], xdg: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> CLIResult {
    let url = try BatonBinary.get()
    let directory = try TemporaryDirectory("baton-net-cli")
    let process = try ChildProcess(
        url.path, arguments, environment: ChildProcess.environment(["XDG_CONFIG_HOME": xdg ?? TestAccount.shared.home.path]),
        stdout: directory.file("out"), stderr: directory.file("err"))
    var code = await process.exit.wait(within: 20)
    let killed = code == nil
    if killed {
        process.signal(SIGKILL)
        code = await process.exit.wait(within: 5)
    }
    let result = (CLIResult(code: code ?? -1, stdout: directory.read("out") ?? "", stderr: directory.read("err") ?? ""), killed)
    if result.1 {
        Issue.record("baton \(arguments.joined(separator: " ")) was still running after 20 s\n\(result.0)", sourceLocation: sourceLocation)
    }
    return result.0
}

/// `baton launch`, `send` and `describe` against a real agent.
@Suite("The command line", .timeLimit(.minutes(1)))
struct CLITests {
    @Test("baton launch: text, --json, exit codes, --app, --prefer, --fallback, --data")
    func launch() async throws {
        try await withAgent { agent in
            let device = agent.address.description
            let ok = try await runBaton(["launch", device, "media:one", "--app", Fixtures.player])
            #expect(ok.code == 0, "\(ok)")
            #expect(ok.stdout == "success\n")

            let missing = try await runBaton(["launch", device, "media:two", "--app", "org.test.nope"])
            #expect(missing.code == 69, "\(missing)")
            #expect(missing.stdout.hasPrefix("app_unavailable: "), "\(missing)")
            #expect(missing.stdout.contains("org.test.nope"))

            let none = try await runBaton(["launch", device, "nothing:x", "--json"])
            #expect(none.code == 69, "\(none)")
            let object = none.json()
            #expect(object?.objectValue?.map(\.key) == ["status", "cause", "class", "exit_code", "detail", "device", "uri"])
            #expect(object?["status"] == .string("protocol_unavailable"))
            #expect(object?["cause"] == .string("unavailable") && object?["class"] == .string("unavailable"))
            #expect(object?["exit_code"] == .int(69))
            #expect(object?["detail"]?.stringValue?.isEmpty == false)
            #expect(object?["device"] == .string(device))
            #expect(object?["uri"] == .string("nothing:x"))

            let json = try await runBaton(["launch", device, "media:three", "--json"])
            #expect(json.code == 0, "\(json)")
            #expect(json.json() == JSON.object([
                .init("status", .string("success")), .init("exit_code", .int(0)), .init("detail", .string("")),
                .init("device", .string(device)), .init("uri", .string("media:three")),
            ]))

            let client = makeClient()
            defer { client.shutdown() }
            let preferred = try await runBaton(["launch", device, "media:four", "--prefer", "org.test.nope", "--prefer", Fixtures.alt, "--prefer", Fixtures.player])
            #expect(preferred.code == 0, "\(preferred)")
            #expect(try await LaunchTests.lastLaunch(client, agent)["who"] == .string("alt"))

            let data = #"{"position": 83.5, "count": 3, "ids": [1, 2], "mixed numbers": [1, 2.5], "nested": {"title": "Film", "paused": true}}"#
            let fallback = try await runBaton(["launch", device, "nothing:five", "--fallback", "media:fb", "--data", data])
            #expect(fallback.code == 0, "\(fallback)")
            let last = try await LaunchTests.lastLaunch(client, agent)
            #expect(last["uri"] == .string("media:fb"))
            #expect(last["who"] == .string("player"))
            #expect(last["data"] == .dictionary([
                "position": .double(83.5), "count": .int(3), "ids": .array([.int(1), .int(2)]),
                "mixed numbers": .array([.double(1), .double(2.5)]),
                "nested": .dictionary(["title": .string("Film"), "paused": .bool(true)]),
            ]))
        }
    }

    @Test("baton launch --data: null, mixed arrays, non-objects and bad JSON are usage errors", arguments: [
        (#"{"a": null}"#, "null"),
        (#"{"a": [1, "x"]}"#, "data.a[2]"),
        (#"{"a": {"b": [[1], ["x"], "y"]}}"#, "data.a.b[3]"),
        (#"[1, 2]"#, "JSON object"),
        (#"{"a": 1"#, "not JSON"),
    ])
    func badData(_ data: String, _ mentions: String) async throws {
        let result = try await runBaton(["launch", "127.0.0.1:1", "media:x", "--data", data])
        #expect(result.code == 2, "\(result)")
        #expect(result.stderr.contains(mentions), "\(result)")
        #expect(result.stdout.isEmpty)
    }

    @Test("baton send: KEY=VALUE types, --json, --json-output, failures on stderr")
    func send() async throws {
        try await withAgent { agent in
            let device = agent.address.description
            let typed = try await runBaton([
                "send", device, "echo", "--app", Fixtures.services,
                "s=hello world", "i=42", "n=-7", "b=true", "f=false", "d=1.5", "e=2e3", "z=0.0", "plus=+5", "eq=a=b", "big=99999999999999999999",
            ])
            #expect(typed.code == 0, "\(typed)")
            #expect(typed.stdout == """
                b: true
                big: 99999999999999999999
                d: 1.5
                e: 2000.0
                eq: a=b
                f: false
                i: 42
                n: -7
                plus: +5
                s: hello world
                z: 0.0

                """)
            // The types, as the agent saw them (echoed back as JSON).
            let asJSON = try await runBaton(["send", device, "echo", "--app", Fixtures.services, "i=42", "d=1.5", "b=true", "s=42x", "empty=", "--json-output"])
            #expect(asJSON.code == 0, "\(asJSON)")
            #expect(asJSON.stdout == #"{"b":true,"d":1.5,"empty":"","i":42,"s":"42x"}"# + "\n")

            let message = #"{"text": "42", "list": [3, 1, 2], "obj": {"b": 1, "a": [true]}, "x": 1.5, "when": "2026-01-01"}"#
            let nested = try await runBaton(["send", device, "echo", "--app", Fixtures.services, "--json", message])
            #expect(nested.code == 0, "\(nested)")
            #expect(nested.stdout == """
                list: [3,1,2]
                obj: {"a":[true],"b":1}
                text: 42
                when: 2026-01-01
                x: 1.5

                """)
            let output = try await runBaton(["send", device, "echo", "--app", Fixtures.services, "--json", message, "--json-output"])
            #expect(output.code == 0, "\(output)")
            #expect(output.stdout == #"{"list":[3,1,2],"obj":{"a":[true],"b":1},"text":"42","when":"2026-01-01","x":1.5}"# + "\n")

            let empty = try await runBaton(["send", device, "echo", "--app", Fixtures.services, "--json-output"])
            #expect(empty.code == 0, "\(empty)")
            #expect(empty.stdout == "{}\n")

            let broken = try await runBaton(["send", device, "broken", "--app", Fixtures.services])
            #expect(broken.code == 1, "\(broken)")
            #expect(broken.stdout.isEmpty)
            #expect(broken.stderr.hasPrefix("failure: "), "\(broken)")
            #expect(broken.stderr.contains("the provider broke"))

            let busy = try await runBaton(["send", device, "busy", "--app", Fixtures.services])
            #expect(busy.code == 69, "\(busy)")
            #expect(busy.stderr.hasPrefix("resource_limits_exceeded"), "\(busy)")

            let noService = try await runBaton(["send", device, "nope", "--app", Fixtures.services])
            #expect(noService.code == 69, "\(noService)")
            #expect(noService.stderr.contains("app_service_unavailable"), "\(noService)")

            let noApp = try await runBaton(["send", device, "echo", "--app", "org.test.nope"])
            #expect(noApp.code == 69, "\(noApp)")
            #expect(noApp.stderr.contains("app_not_installed"), "\(noApp)")
        }
    }

    @Test("baton send: usage errors", arguments: [
        ["send", "127.0.0.1:1", "echo", "--app", "a", "--json", "{}", "k=v"],
        ["send", "127.0.0.1:1", "echo", "--app", "a", "novalue"],
        ["send", "127.0.0.1:1", "echo", "--app", "a", "=v"],
        ["send", "127.0.0.1:1", "echo", "--app", "a", "k=1", "k=2"],
        ["send", "127.0.0.1:1", "echo", "--app", "a", "--json", #"{"k": null}"#],
        ["send", "127.0.0.1:1", "echo"],
        ["send", "127.0.0.1:1", "echo", "--app", "a", "--connect-timeout", "soon"],
    ])
    func sendUsage(_ arguments: [String]) async throws {
        let result = try await runBaton(arguments)
        #expect(result.code == 2, "\(result)")
        #expect(!result.stderr.isEmpty)
        #expect(result.stdout.isEmpty)
    }

    @Test("baton describe: text and --json")
    func describe() async throws {
        try await withAgent { agent in
            let device = agent.address.description
            let text = try await runBaton(["describe", device])
            #expect(text.code == 0, "\(text)")
            let lines = text.stdout.split(separator: "\n").map(String.init)
            #expect(Array(lines.prefix(6)) == [
                "name: Net Test", "kind: tv", "platform: \(Platform.current.rawValue)", "id: \(agent.id)",
                "model: Model T", "manufacturer: ACME",
            ])
            #expect(lines.contains("  org.test.services (Services)"))
            #expect(lines.contains("    services: ask, broken, busy, closed, echo, forever, hangup, launches, sleep, watch"))
            #expect(lines.contains("    schemes: media, alt, shared"))

            let json = try await runBaton(["describe", device, "--json"])
            #expect(json.code == 0, "\(json)")
            let object = try #require(json.json())
            #expect(object["address"] == .string(device))
            #expect(object["device"] == JSON.object([
                .init("id", .string(agent.id)), .init("name", .string("Net Test")), .init("kind", .string("tv")),
                .init("platform", .string(Platform.current.rawValue)), .init("model", .string("Model T")),
                .init("manufacturer", .string("ACME")),
            ]))
            let apps = try #require(object["apps"]?.arrayValue)
            #expect(apps.compactMap { $0["id"]?.stringValue } == [Fixtures.player, Fixtures.alt, Fixtures.status, Fixtures.argv, Fixtures.unstartable, Fixtures.services])
            #expect(apps.last == JSON.object([
                .init("id", .string(Fixtures.services)), .init("name", .string("Services")),
                .init("schemes", .array([])),
                .init("services", .array(["ask", "broken", "busy", "closed", "echo", "forever", "hangup", "launches", "sleep", "watch"].map(JSON.string))),
                .init("attributes", .object([.init("level", .int(3)), .init("tier", .string("test"))])),
                .init("anonymous", .bool(true)),
            ]))
            #expect(apps.first?["schemes"] == .array([.string("media")]))
        }
    }

    @Test("an unreachable device: remote_system_unavailable, exit 69")
    func unreachable() async throws {
        let closed = try ClosedPort()
        defer { closed.close() }
        let device = closed.device.description
        let launch = try await runBaton(["launch", device, "media:x", "--connect-timeout", "2s"])
        #expect(launch.code == 69, "\(launch)")
        #expect(launch.stdout.hasPrefix("remote_system_unavailable"), "\(launch)")
        let json = try await runBaton(["launch", device, "media:x", "--json"])
        #expect(json.code == 69, "\(json)")
        #expect(json.json()?["status"] == .string("remote_system_unavailable"))
        let send = try await runBaton(["send", device, "echo", "--app", Fixtures.services, "k=v"])
        #expect(send.code == 69, "\(send)")
        #expect(send.stderr.hasPrefix("remote_system_unavailable"), "\(send)")
        #expect(send.stdout.isEmpty)
        let describe = try await runBaton(["describe", device, "--json"])
        #expect(describe.code == 69, "\(describe)")
        #expect(describe.stderr.contains("remote_system_unavailable"), "\(describe)")
        // --json: the failure is one object on stdout too.
        #expect(describe.json()?["status"] == .string("remote_system_unavailable"), "\(describe)")
        #expect(describe.json()?["class"] == .string("unavailable"), "\(describe)")
    }

    @Test("a DEVICE that tries to be host:port and is not is a usage error", arguments: [
        ["launch", "127.0.0.1:99999", "media:x"],
        ["launch", "127.0.0.1:", "media:x"],
        ["describe", ":47300"],
        ["describe", ""],
    ])
    func badDevice(_ arguments: [String]) async throws {
        let result = try await runBaton(arguments)
        #expect(result.code == 2, "\(result)")
        #expect(result.stderr.contains("host:port"), "\(result)")
        #expect(result.stdout.isEmpty)
    }

    @Test("a DEVICE name or id that discovery does not find answers not_found, exit 68", arguments: [
        ["launch", "living-room-tv", "media:x"],
        ["send", "Living Room TV nobody has", "echo", "--app", "a"],
        ["describe", "tv.local"],
    ])
    func unknownDevice(_ arguments: [String]) async throws {
        let result = try await runBaton(arguments + ["--connect-timeout", "300ms", "--peer", "127.0.0.1:1"])
        #expect(result.code == 68, "\(result)")
        #expect(result.stderr.contains("not_found"), "\(result)")
        #expect(result.stdout.isEmpty)
    }
}
