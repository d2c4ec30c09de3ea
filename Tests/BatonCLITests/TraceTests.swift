import Foundation
import Testing

/// `--trace`, `--trace-dir`, `baton trace show` and TRACEPARENT, against a real agent.
@Suite("Traces")
struct TraceTests {
    static let traceID = "0af7651916cd43dd8448eb211c80319c"
    static let traceparent = "00-\(traceID)-b7ad6b7169203331-01"

    static let agentConfig = """
        device{ name = "Traced TV", kind = "tv" }
        app{ id = "org.example.player", name = "Player", schemes = {"media"},
             launch = function(uri) return "success" end,
             services = { echo = function(msg) return { said = msg.say } end } }
        """

    /// A script that finds the agent, launches on it and on an address nobody answers at,
    /// sends to its service, and has a task fail.
    static func script(port: Int) -> String {
        """
        local tv = baton.find("127.0.0.1:\(port)", {required = true})
        baton.log.info("found", tv.name)
        baton.launch(tv, "media:film", {app = "org.example.player"})
        baton.launch("127.0.0.1:1", "media:film")
        local reply = baton.appservice.send(tv, "echo", {say = "secret"}, {package = "org.example.player"})
        local t = baton.spawn(function()
          baton.sleep(0.01)
          error("boom")
        end)
        pcall(t.wait, t)
        """
    }

    static func records(_ path: URL) throws -> [[String: Any]] {
        let text = try String(contentsOf: path, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
    }

    @Test("baton run --trace: every line parses; every call has its end with device and status; errors carry frames; the agent logs under the caller's trace id; no bodies unless asked")
    func runTrace() async throws {
        let dir = try ScriptDirectory()
        try dir.write("agent.lua", Self.agentConfig)
        let agent = try await FleetAgent.start(config: dir.url.appendingPathComponent("agent.lua").path, directory: dir.url, tag: "agent")
        defer { agent.kill(SIGTERM) }
        try dir.write("t.lua", Self.script(port: agent.port))
        let result = try await dir.baton("run", "--insecure", "--trace", "t.jsonl", "t.lua", environment: ["TRACEPARENT": Self.traceparent])
        #expect(result.exitCode == 1, "\(result)")
        let records = try Self.records(dir.url.appendingPathComponent("t.jsonl"))
        #expect(records.first?["kind"] as? String == "run.start")
        #expect(records.last?["kind"] as? String == "run.end" && records.last?["exit_code"] as? Int == 1)
        #expect(records.map { $0["seq"] as? Int } == Array(1...records.count).map { Optional($0) })
        #expect(records.allSatisfy { $0["v"] as? Int == 1 && $0["run"] as? String == records.first?["run"] as? String && $0["mono"] is Double })
        #expect(records.first?["trace_id"] as? String == Self.traceID)
        #expect(records.first?["parent_span"] as? String == "b7ad6b7169203331")

        // Each call's start and end, joined.
        let ends = Dictionary(records.filter { $0["kind"] as? String == "call.end" }.map { ($0["start"] as? Int ?? 0, $0) }, uniquingKeysWith: { a, _ in a })
        let calls: [(String, String, String)] = records.filter { $0["kind"] as? String == "call.start" }.map { start in
            let end = ends[start["seq"] as? Int ?? -1]
            return (start["call"] as? String ?? "", start["device"] as? String ?? "", end?["status"] as? String ?? "no end")
        }
        let address = "127.0.0.1:\(agent.port)"
        #expect(calls.map { $0.0 } == ["baton.find", "baton.launch", "baton.launch", "baton.appservice.send"], "\(calls)")
        #expect(calls.map { $0.2 } == ["success", "success", "remote_system_unavailable", "success"], "\(calls)")
        #expect(calls[0].1 == address && calls[1].1 == "Traced TV" && calls[2].1 == "127.0.0.1:1", "\(calls)")
        #expect(records.contains { $0["kind"] as? String == "log" && $0["message"] as? String == "found Traced TV" })

        let error = try #require(records.first { $0["kind"] as? String == "error" })
        #expect(error["message"] as? String == "t.lua:8: boom")
        let frames = try #require(error["traceback"] as? [[String: Any]])
        #expect(frames.first?["file"] as? String == "t.lua" && frames.first?["line"] as? Int == 8, "\(frames)")
        let spawned = try #require(records.first { $0["kind"] as? String == "task.spawn" && $0["task"] as? Int == error["task"] as? Int })
        #expect(spawned["parent"] as? Int == 1 && spawned["at"] as? String == "t.lua:6")
        #expect(records.contains { $0["kind"] as? String == "task.end" && $0["task"] as? Int == error["task"] as? Int && $0["status"] as? String == "error" })

        // Bodies only with --trace-bodies.
        let text = try String(contentsOf: dir.url.appendingPathComponent("t.jsonl"), encoding: .utf8)
        #expect(!text.contains("secret") && !text.contains("\"body\""))
        let bodies = try await dir.baton("run", "--insecure", "--trace", "b.jsonl", "--trace-bodies", "t.lua")
        #expect(bodies.exitCode == 1, "\(bodies)")
        let sent = try Self.records(dir.url.appendingPathComponent("b.jsonl")).filter { $0["call"] as? String == "baton.appservice.send" || $0["kind"] as? String == "call.end" }
        #expect(sent.contains { ($0["body"] as? [String: Any])?["say"] as? String == "secret" }, "\(sent)")
        #expect(sent.contains { ($0["body"] as? [String: Any])?["said"] as? String == "secret" }, "\(sent)")

        // The agent's log lines about the launch carry the caller's trace id.
        #expect(agent.log.contains("launched") && agent.log.contains("trace_id=\(Self.traceID)"), "\(agent.log)")

        // The tree: calls with status and duration, failures marked; exit 1 for a failed run.
        let shown = try await dir.baton("trace", "show", "t.jsonl")
        #expect(shown.exitCode == 1, "\(shown)")
        #expect(shown.stdout.contains("exit 1 (failed)"), "\(shown.stdout)")
        #expect(shown.stdout.contains("baton.launch Traced TV  success  "), "\(shown.stdout)")
        #expect(shown.stdout.range(of: #"baton\.launch 127\.0\.0\.1:1  remote_system_unavailable  [0-9.]+ (µs|ms)  ✗"#, options: .regularExpression) != nil, "\(shown.stdout)")
        #expect(shown.stdout.contains("✗ error: t.lua:8: boom") && shown.stdout.contains("at t.lua:8"), "\(shown.stdout)")
        let failures = try await dir.baton("trace", "show", "--failures", "t.jsonl")
        #expect(!failures.stdout.contains("baton.find") && failures.stdout.contains("remote_system_unavailable"), "\(failures.stdout)")
    }

    @Test("baton batch --trace: each item's calls carry its key and attempt; retries and item errors are recorded")
    func batchTrace() async throws {
        let dir = try ScriptDirectory()
        try dir.write("agent.lua", Self.agentConfig)
        let agent = try await FleetAgent.start(config: dir.url.appendingPathComponent("agent.lua").path, directory: dir.url, tag: "agent")
        defer { agent.kill(SIGTERM) }
        try dir.write("job.lua", """
            function job(item, ctx)
              if item.key == "b" and ctx.attempt == 1 then baton.error("unavailable", "not yet") end
              if item.key == "c" then error("broken") end
              baton.check(baton.launch("127.0.0.1:\(agent.port)", "media:" .. item.key, {app = "org.example.player"}))
            end
            """)
        try dir.write("items.json", #"[{"key": "a"}, {"key": "b"}, {"key": "c"}]"#)
        let result = try await dir.baton("batch", "job.lua", "--input", "items.json", "--insecure", "--retries", "1",
                                         "--backoff", "10ms..20ms", "--tolerate", "1", "--trace", "b.jsonl", "--report", "r.json")
        #expect(result.exitCode == 0, "\(result)")
        let records = try Self.records(dir.url.appendingPathComponent("b.jsonl"))
        let launches = records.filter { $0["kind"] as? String == "call.start" && $0["call"] as? String == "baton.launch" }
        #expect(Set(launches.map { "\($0["item"] ?? "?")/\($0["attempt"] ?? "?")" }) == ["a/1", "b/2"], "\(launches)")
        let retry = try #require(records.first { $0["kind"] as? String == "retry" })
        #expect(retry["item"] as? String == "b" && retry["class"] as? String == "unavailable" && retry["attempt"] as? Int == 1)
        let error = try #require(records.first { $0["kind"] as? String == "error" && $0["item"] as? String == "c" })
        #expect(error["class"] as? String == "script" && (error["traceback"] as? [[String: Any]])?.first?["line"] as? Int == 3, "\(error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent("r.json"))) as? [String: Any])
        #expect(report["run_id"] as? String == records.first?["run"] as? String)
        let shown = try await dir.baton("trace", "show", "b.jsonl")
        #expect(shown.stdout.contains("item b attempt 2") && shown.stdout.contains("retry b after attempt 1 (unavailable)"), "\(shown.stdout)")
    }

    @Test("--trace-dir keeps the newest --trace-keep traces and, apart from them, the newest failed ones")
    func traceDirectory() async throws {
        let dir = try ScriptDirectory()
        try dir.write("ok.lua", "baton.log.debug('fine')")
        try dir.write("bad.lua", "error('bad')")
        for script in ["ok.lua", "bad.lua", "bad.lua", "ok.lua", "ok.lua", "ok.lua"] {
            _ = try await dir.baton("run", "--trace-dir", "traces", "--trace-keep", "2", script)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("traces").path).sorted()
        #expect(names.count == 4, "\(names)")
        #expect(names.filter { $0.hasSuffix("-failed.jsonl") }.count == 2, "\(names)")
        #expect(names.filter { $0.hasSuffix("-ok.jsonl") }.count == 2, "\(names)")
        // The two failed runs came before the last three good ones: kept apart from them.
        #expect(names.last?.hasSuffix("-ok.jsonl") == true)
    }

    @Test("trace mistakes: a file that is not a trace exits 2; --trace with --trace-dir, --trace-bodies alone are usage errors")
    func mistakes() async throws {
        let dir = try ScriptDirectory()
        try dir.write("x.txt", "hello\n")
        let shown = try await dir.baton("trace", "show", "x.txt")
        #expect(shown.exitCode == 2 && shown.stderr.contains("x.txt:1: not a JSON object"), "\(shown)")
        let missing = try await dir.baton("trace", "show", "nothing.jsonl")
        #expect(missing.exitCode == 2 && missing.stderr.contains("cannot read nothing.jsonl"), "\(missing)")
        let both = try await dir.baton("run", "--trace", "a", "--trace-dir", "b", "-e", "x = 1")
        #expect(both.exitCode == 2, "\(both)")
        let bodies = try await dir.baton("run", "--trace-bodies", "-e", "x = 1")
        #expect(bodies.exitCode == 2, "\(bodies)")
    }
}
