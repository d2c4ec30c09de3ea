import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// How traces end when runs do not end by themselves: SIGTERM and SIGINT (what systemd and
/// a terminal send), a loop stuck in Lua; what `baton trace show` makes of files that are not
/// traces and of traces cut short; and what --trace-dir's rotation may delete.
@Suite("Trace endings")
struct TraceEndingTests {
    /// A script that logs `lines` lines, then has its own process sent `signal` a moment later
    /// (in the background: the moment is the run's own), then waits (`busy`: spins in Lua
    /// without ever yielding).
    static func signalled(_ signal: String, lines: Int = 50, busy: Bool = false) -> String {
        """
        local pid = io.open("/proc/self/stat"):read("n")
        for i = 1, \(lines) do baton.log.debug("line " .. i) end
        os.execute("(sleep 0.3; kill -\(signal) " .. pid .. ") &")
        \(busy ? "while true do end" : "baton.sleep(15)")
        """
    }

    static func records(_ url: URL) throws -> [[String: Any]] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a record: \(line)")
        }
    }

    @Test("SIGTERM and SIGINT of baton run --trace: the trace holds every line and ends with run.end (interrupted, 143 or 130); the run dies by the signal")
    func signalFinishesTrace() async throws {
        for (signal, code) in [("TERM", 143), ("INT", 130)] {
            let dir = try ScriptDirectory()
            try dir.write("s.lua", Self.signalled(signal))
            let result = try await dir.baton("run", "--trace", "t.jsonl", "s.lua")
            #expect(result.exitCode == Int32(code), "\(result)")
            let records = try Self.records(dir.url.appendingPathComponent("t.jsonl"))
            #expect(records.filter { $0["kind"] as? String == "log" }.count == 50, "\(records.count) records")
            let end = try #require(records.last)
            #expect(end["kind"] as? String == "run.end" && end["exit_code"] as? Int == code && end["outcome"] as? String == "interrupted", "\(end)")
            let shown = try await dir.baton("trace", "show", "t.jsonl")
            #expect(shown.exitCode == 1 && shown.stdout.contains("exit \(code) (interrupted)"), "\(shown)")
        }
    }

    @Test("SIGTERM of baton run --trace-dir: the trace is finished and renamed -failed")
    func signalRenamesTrace() async throws {
        let dir = try ScriptDirectory()
        try dir.write("s.lua", Self.signalled("TERM"))
        let result = try await dir.baton("run", "--trace-dir", "traces", "s.lua")
        #expect(result.exitCode == 143, "\(result)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("traces").path)
        #expect(names.count == 1 && names[0].hasSuffix("-failed.jsonl"), "\(names)")
        let records = try Self.records(dir.url.appendingPathComponent("traces/\(names[0])"))
        #expect(records.last?["kind"] as? String == "run.end" && records.last?["exit_code"] as? Int == 143)
    }

    @Test("SIGTERM of a traced run stuck in Lua that never yields: the trace is finished from outside after the grace; exit 143")
    func signalStuckRun() async throws {
        let dir = try ScriptDirectory()
        try dir.write("s.lua", Self.signalled("TERM", busy: true))
        let result = try await dir.baton("run", "--trace", "t.jsonl", "s.lua")
        #expect(result.exitCode == 143, "\(result)")
        let records = try Self.records(dir.url.appendingPathComponent("t.jsonl"))
        #expect(records.filter { $0["kind"] as? String == "log" }.count == 50)
        #expect(records.last?["kind"] as? String == "run.end" && records.last?["exit_code"] as? Int == 143, "\(records.last ?? [:])")
    }

    @Test("kill -9 of a traced run that has gone quiet: what it wrote before is in the file (flushed within the flush interval, no record needed)")
    func killedQuietRun() async throws {
        let dir = try ScriptDirectory()
        // Ten lines, then quiet for a second before the kill: the lines are out by then.
        try dir.write("s.lua", """
            local pid = io.open("/proc/self/stat"):read("n")
            for i = 1, 10 do baton.log.debug("line " .. i) end
            os.execute("(sleep 1; kill -9 " .. pid .. ") &")
            baton.sleep(15)
            """)
        let result = try await dir.baton("run", "--trace", "t.jsonl", "s.lua")
        #expect(result.exitCode == 128 + SIGKILL, "\(result)")
        let records = try Self.records(dir.url.appendingPathComponent("t.jsonl"))
        #expect(records.filter { $0["kind"] as? String == "log" }.count == 10, "\(records)")
        let shown = try await dir.baton("trace", "show", "t.jsonl")
        #expect(shown.exitCode == 0 && shown.stdout.contains("unfinished"), "\(shown)")
    }

    @Test("trace show: an empty file or JSON that is not a trace exits 2; a trace torn mid-line is shown up to its tear, saying where it was cut (exit 1)")
    func showTornAndForeign() async throws {
        let dir = try ScriptDirectory()
        try dir.write("empty.jsonl", "")
        try dir.write("other.jsonl", #"{"name": "inventory"}"# + "\n")
        for file in ["empty.jsonl", "other.jsonl"] {
            let shown = try await dir.baton("trace", "show", file)
            #expect(shown.exitCode == 2 && shown.stderr.contains("is this a trace?") && shown.stdout.isEmpty, "\(shown)")
        }
        try dir.write("ok.lua", "baton.log.info('before') baton.spawn(function() baton.sleep(0.01) end)")
        let ran = try await dir.baton("run", "--trace", "t.jsonl", "ok.lua")
        #expect(ran.exitCode == 0, "\(ran)")
        let text = try String(contentsOf: dir.url.appendingPathComponent("t.jsonl"), encoding: .utf8)
        var lines = text.split(separator: "\n").map(String.init)
        // The last record (run.end) cut in half, as a killed writer leaves it.
        let last = lines.removeLast()
        try dir.write("torn.jsonl", lines.joined(separator: "\n") + "\n" + last.prefix(last.count / 2))
        let shown = try await dir.baton("trace", "show", "torn.jsonl")
        #expect(shown.exitCode == 1, "\(shown)")
        #expect(shown.stdout.contains("unfinished") && shown.stdout.contains("task 2"), "\(shown)")
        #expect(shown.stdout.contains("✗ cut at line \(lines.count + 1): "), "\(shown)")
    }

    @Test("a trace on a full disk: the run's own exit code stands, and stderr says the trace could not be written in full")
    func traceOnFullDisk() async throws {
        let dir = try ScriptDirectory()
        let disk = try BatchJournalTests.smallDisk(dir)
        defer { BatchJournalTests.unmount(disk) }
        try dir.write("s.lua", "for i = 1, 20000 do baton.log.debug('a line long enough to fill a small disk soon: ' .. i) end")
        let result = try await BatonProcess.run(["run", "--trace", "disk/t.jsonl", "s.lua"], directory: dir.url, limit: 60)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.contains("cannot write the trace disk/t.jsonl in full: No space left on device"), "\(result)")
    }

    @Test("--trace-dir rotation removes only traces it named: a user's 0-inventory.jsonl and notes stay")
    func rotationLeavesForeignFiles() async throws {
        let dir = try ScriptDirectory()
        let traces = dir.url.appendingPathComponent("traces")
        try FileManager.default.createDirectory(at: traces, withIntermediateDirectories: true)
        try dir.write("traces/0-inventory.jsonl", #"{"tv": "living room"}"# + "\n")
        try dir.write("traces/notes.txt", "mine\n")
        try dir.write("traces/2020-01-01T000000.000Z-not-a-run.jsonl", "{}\n")
        try dir.write("bad.lua", "error('bad')")
        for _ in 1...3 {
            _ = try await dir.baton("run", "--trace-dir", "traces", "--trace-keep", "1", "bad.lua")
        }
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: traces.path))
        #expect(names.isSuperset(of: ["0-inventory.jsonl", "notes.txt", "2020-01-01T000000.000Z-not-a-run.jsonl"]), "\(names)")
        #expect(names.filter { $0.hasSuffix("-failed.jsonl") }.count == 1, "\(names)")
        #expect(names.count == 4, "\(names)")
    }
}
