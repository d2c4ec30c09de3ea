import Foundation
import Testing

/// `baton.log.*` on stderr, in text or JSON, filtered by -q / -v; `print` on stdout.
@Suite("Logging")
struct LoggingTests {
    static let script = """
        baton.log.debug("dbg", 1)
        baton.log.info("hello", 1, true, nil, 2.5)
        baton.log.warn("careful", 1)
        baton.log.error("bad", {} == nil)
        print("out")
        """

    /// (level, message) of every stderr line, recording an issue for a line that is not a
    /// well-formed text log line.
    private func textLogs(_ r: BatonResult, sourceLocation: SourceLocation = #_sourceLocation) -> [(String, String)] {
        r.stderrLines.compactMap { line in
            guard let log = TextLogLine(line) else {
                Issue.record("not a text log line: \(line)", sourceLocation: sourceLocation)
                return nil
            }
            return (log.level, log.message)
        }
    }

    @Test("text format: time, level padded to 5, message; info is the default level")
    func textDefault() async throws {
        let r = try await runScript(Self.script)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "out\n", "print goes to stdout, logs do not")
        let logs = textLogs(r)
        #expect(logs.map(\.0) == ["INFO ", "WARN ", "ERROR"], "\(r)")
        #expect(logs.map(\.1) == ["hello 1 true nil 2.5", "careful 1", "bad false"], "\(r)")
    }

    @Test("the level column is exactly as documented")
    func exactColumns() async throws {
        let r = try await runScript(Self.script, flags: ["-v"])
        let lines = r.stderrLines
        #expect(lines.count == 4, "\(r)")
        let expected = ["Z DEBUG dbg 1", "Z INFO  hello 1 true nil 2.5", "Z WARN  careful 1", "Z ERROR bad false"]
        for (line, suffix) in zip(lines, expected) {
            #expect(line.hasSuffix(suffix), "\(line)")
        }
    }

    @Test("-v and --verbose show debug too", arguments: ["-v", "--verbose"])
    func verbose(_ flag: String) async throws {
        let r = try await runScript(Self.script, flags: [flag])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "out\n")
        let logs = textLogs(r)
        #expect(logs.map(\.0) == ["DEBUG", "INFO ", "WARN ", "ERROR"], "\(r)")
        #expect(logs.first?.1 == "dbg 1")
    }

    @Test("-q and --quiet show errors only", arguments: ["-q", "--quiet"])
    func quiet(_ flag: String) async throws {
        let r = try await runScript(Self.script, flags: [flag])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "out\n")
        let logs = textLogs(r)
        #expect(logs.map(\.0) == ["ERROR"], "\(r)")
        #expect(logs.map(\.1) == ["bad false"], "\(r)")
    }

    @Test("arguments are joined by spaces with tostring, baton's types included")
    func tostringJoin() async throws {
        let r = try await runScript("""
            baton.log.info(baton.date(0), baton.uuid("6BA7B810-9DAD-11D1-80B4-00C04FD430C8"), baton.bytes("raw"))
            baton.log.info(setmetatable({}, {__tostring = function() return "custom" end}), 10 // 3, 2^53)
            baton.log.info()
            baton.log.warn("single")
            """)
        #expect(r.exitCode == 0, "\(r)")
        let logs = textLogs(r)
        #expect(logs.map(\.1) == [
            "1970-01-01T00:00:00Z 6ba7b810-9dad-11d1-80b4-00c04fd430c8 raw", "custom 3 9.007199254741e+15", "", "single",
        ], "\(r)")
    }

    @Test("the time is an ISO 8601 UTC timestamp with milliseconds, close to now")
    func timestamp() async throws {
        let before = Date()
        let r = try await runScript("baton.log.info('now')")
        let after = Date()
        let log = try #require(TextLogLine(r.stderrLines.first ?? ""), "\(r)")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        let time = try #require(formatter.date(from: log.time) ?? plain.date(from: log.time), "\(log.time)")
        #expect(time >= before.addingTimeInterval(-2) && time <= after.addingTimeInterval(2), "\(log.time)")
    }

    /// Every line starts `YYYY-MM-DDTHH:MM:SS.mmmZ `, also in the first millisecond of a
    /// second, where a formatter that drops a zero fraction would print `...:00Z`. The script
    /// sleeps to just before the turn of a wall-clock second and logs only while its own clock
    /// reads .000, until it has logged 20 lines that way (a preempted turn just tries the next).
    @Test("log times always carry three millisecond digits, even at .000")
    func millisecondsAlwaysShown() async throws {
        let r = try await runScript("""
            local logged = 0
            while logged < 20 do
              local f = baton.date():epoch() % 1
              if f < 0.0008 then
                baton.log.info("tick")
                logged = logged + 1
              elseif f < 0.99 then
                baton.sleep(0.995 - f)
              end
            end
            """, flags: ["--timeout", "60s"])
        #expect(r.exitCode == 0, "\(r)")
        let lines = r.stderrLines
        #expect(lines.count == 20, "\(r)")
        let pattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z INFO  tick$/#
        let bad = lines.filter { $0.wholeMatch(of: pattern) == nil }
        let badCount = bad.count
        #expect(badCount == 0, "\(badCount) of \(lines.count) lines lack milliseconds, e.g. \(bad.prefix(3))")
    }

    @Test("--log-format json: every stderr line is one object with time, level, message, source")
    func json() async throws {
        let r = try await runScript(Self.script, flags: ["--log-format", "json", "-v"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "out\n")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 4, "\(r)")
        #expect(objects.map { $0["level"] as? String } == ["debug", "info", "warn", "error"], "\(r)")
        #expect(objects.map { $0["message"] as? String } == ["dbg 1", "hello 1 true nil 2.5", "careful 1", "bad false"])
        for o in objects {
            #expect(o["source"] as? String == "script", "\(o)")
            let time = o["time"] as? String ?? ""
            #expect(time.wholeMatch(of: #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z/#) != nil, "\(time)")
        }
    }

    @Test("--log-format json respects the level: default info, -q errors only", arguments: [
        ([String](), ["info", "warn", "error"]), (["-q"], ["error"]), (["--verbose"], ["debug", "info", "warn", "error"]),
    ])
    func jsonLevels(_ flags: [String], _ levels: [String]) async throws {
        let r = try await runScript(Self.script, flags: ["--log-format", "json"] + flags)
        #expect(r.exitCode == 0, "\(r)")
        #expect(jsonLines(r.stderr).map { $0["level"] as? String } == levels, "\(r)")
    }

    @Test("--log-format json escapes newlines, quotes and unicode in messages")
    func jsonEscaping() async throws {
        let r = try await runScript(#"baton.log.warn("line1\nline2", '"quoted"', "tab\there", "é😀")"#, flags: ["--log-format", "json"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stderrLines.count == 1, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.first?["message"] as? String == "line1\nline2 \"quoted\" tab\there é😀", "\(r)")
    }

    @Test("--log-format json: logs and every kind of failure report are one object a line")
    func jsonEverything() async throws {
        let r = try await runScript("""
            baton.log.info("multi\\nline")
            baton.spawn(function() error("in task") end)
            baton.after(0, function() error("in timer") end)
            baton.sleep(0.02)
            baton.log.warn("still here")
            error({})
            """, flags: ["--log-format", "json"])
        #expect(r.exitCode == 1, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == r.stderrLines.count, "\(r)")
        #expect(objects.count == 5, "\(r)")
        #expect(objects.map { $0["level"] as? String } == ["info", "error", "error", "warn", "error"], "\(r)")
        #expect(objects.map { $0["source"] as? String } == ["script", "baton", "baton", "script", "baton"], "\(r)")
        #expect(objects.first?["message"] as? String == "multi\nline")
        #expect(objects.dropFirst().first?["task"] as? String == "task 2 (spawned at x.lua:2)")
        #expect(objects.dropFirst(2).first?["task"] as? String == "timer 1 (set at x.lua:3)")
        #expect(objects.last?["task"] == nil)
        #expect((objects.last?["traceback"] as? String)?.contains("x.lua:6: in main chunk") == true, "\(r)")
    }

    @Test("--log-format json: usage errors and scripts that do not load are JSON lines too", arguments: [
        ["run", "--log-format", "json", "--timeout", "zz", "x.lua"],
        ["run", "--log-format=json", "--bogus"],
        ["run", "--log-format", "json", "-e", "x = = 1"],
    ])
    func jsonUsageErrors(_ args: [String]) async throws {
        let r = try await BatonProcess.run(args)
        #expect(r.exitCode == 2, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1 && r.stderrLines.count == 1, "\(r)")
        #expect(objects.first?["level"] as? String == "error", "\(r)")
    }

    @Test("--log-format text is the default and can be asked for")
    func textExplicit() async throws {
        let r = try await runScript("baton.log.info('x')", flags: ["--log-format", "text"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(TextLogLine(r.stderrLines.first ?? "")?.message == "x", "\(r)")
    }

    @Test("logs from tasks and timers go to stderr in order with the main chunk's")
    func fromTasks() async throws {
        let r = try await runScript("""
            baton.log.info("main")
            baton.spawn(function() baton.log.info("task") end)
            baton.after(0.01, function() baton.log.info("timer") end)
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(textLogs(r).map(\.1) == ["main", "task", "timer"], "\(r)")
    }
}
