import Foundation
import Testing

/// How uncaught errors and scripts that do not load are shown on stderr.
@Suite("Error reports")
struct ErrorReportTests {
    static let nested = """
        local function f()
          error("boom")
        end
        f()
        """

    @Test("an uncaught error in main: message with its line, then Lua's traceback")
    func mainTraceback() async throws {
        let r = try await runScript(Self.nested)
        #expect(r.exitCode == 1, "\(r)")
        let lines = r.stderrLines
        #expect(lines.first == "x.lua:2: boom", "\(r)")
        #expect(lines.dropFirst().first == "stack traceback:", "\(r)")
        #expect(lines.contains("\tx.lua:2: in local 'f'"), "\(r)")
        #expect(lines.contains("\tx.lua:4: in main chunk"), "\(r)")
        // The frame of f comes before the main chunk's.
        let f = lines.firstIndex(of: "\tx.lua:2: in local 'f'")
        let main = lines.firstIndex(of: "\tx.lua:4: in main chunk")
        if let f, let main { #expect(f < main, "\(r)") }
        #expect(r.stdout == "")
    }

    @Test("error(msg, 2) blames the caller's line")
    func errorLevel() async throws {
        let r = try await runScript("""
            local M = {}
            function M.check(x)
              if not x then error("need x", 2) end
            end
            local function caller()
              M.check(nil)
            end
            caller()
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "x.lua:6: need x", "\(r)")
        #expect(r.stderr.contains("\tx.lua:3: in "), "\(r)")
        #expect(r.stderr.contains("\tx.lua:6: in local 'caller'"), "\(r)")
        #expect(r.stderr.contains("\tx.lua:8: in main chunk"), "\(r)")
    }

    @Test("a runtime error (not error()) names the line and the variable")
    func runtimeError() async throws {
        let r = try await runScript("""
            local t = {}
            local x = nil
            print(t.a .. "x")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first?.hasPrefix("x.lua:3: attempt to concatenate") == true, "\(r)")
        #expect(r.stderr.contains("\tx.lua:3: in main chunk"), "\(r)")
    }

    @Test("an error in a spawned task names the task and where it was spawned")
    func taskError() async throws {
        let r = try await runScript("""
            print("start")
            local function boom()
              error("boom")
            end
            local h = baton.spawn(boom)
            baton.sleep(0.01)
            print("after", h:status())
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "start\nafter\tfailed\n")
        let lines = r.stderrLines
        #expect(lines.first == "error in task 2 (spawned at x.lua:5):", "\(r)")
        #expect(lines.dropFirst().first == "x.lua:3: boom", "\(r)")
        #expect(lines.dropFirst(2).first == "stack traceback:", "\(r)")
        #expect(lines.contains { $0.hasPrefix("\tx.lua:3: in ") }, "\(r)")
    }

    @Test("tasks are numbered in spawn order after the main chunk")
    func taskNumbers() async throws {
        let r = try await runScript("""
            baton.spawn(function() end)
            baton.spawn(function() end)
            baton.spawn(function()
              error("third")
            end)
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "error in task 4 (spawned at x.lua:3):", "\(r)")
        #expect(r.stderrLines.dropFirst().first == "x.lua:4: third", "\(r)")
    }

    @Test("an error in a timer names the timer and where it was set")
    func timerError() async throws {
        let r = try await runScript("""
            print("start")
            baton.after(0.01, function(t)
              print("timer", t:active())
              error("tboom")
            end)
            baton.sleep(0.05)
            print("end")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "start\ntimer\tfalse\nend\n")
        let lines = r.stderrLines
        #expect(lines.first == "error in timer 1 (set at x.lua:2):", "\(r)")
        #expect(lines.dropFirst().first == "x.lua:4: tboom", "\(r)")
        #expect(lines.dropFirst(2).first == "stack traceback:", "\(r)")
    }

    @Test("an error in a repeating timer names it too, and the timer goes on")
    func everyError() async throws {
        let r = try await runScript("""
            local n = 0
            local t
            t = baton.every(0.01, function()
              n = n + 1
              if n == 3 then t:stop() print("stopped") end
              if n == 1 then error("first tick") end
            end)
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "stopped\n")
        #expect(r.stderrLines.first == "error in timer 1 (set at x.lua:3):", "\(r)")
        #expect(r.stderrLines.dropFirst().first == "x.lua:6: first tick", "\(r)")
    }

    @Test("with -e the chunk is named (command line)")
    func commandLineChunk() async throws {
        let r = try await baton("run", "-e", "local x = 1\nerror('from -e')")
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "(command line):2: from -e", "\(r)")
        #expect(r.stderr.contains("\t(command line):2: in main chunk"), "\(r)")
    }

    @Test("with - the chunk is named stdin")
    func stdinChunk() async throws {
        let r = try await baton("run", "-", stdin: "print('read')\nerror('from stdin')\n")
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "read\n")
        #expect(r.stderrLines.first == "stdin:2: from stdin", "\(r)")
        #expect(r.stderr.contains("\tstdin:2: in main chunk"), "\(r)")
    }

    @Test("syntax errors are file:line: message, for files, -e and stdin")
    func syntaxErrors() async throws {
        let file = try await runScript("local x\nx = = 1\n", name: "bad.lua")
        #expect(file.exitCode == 2, "\(file)")
        #expect(file.stderr == "bad.lua:2: unexpected symbol near '='\n", "\(file)")

        let chunk = try await baton("run", "-e", "x = = 1")
        #expect(chunk.exitCode == 2, "\(chunk)")
        #expect(chunk.stderr == "(command line):1: unexpected symbol near '='\n", "\(chunk)")

        let stdin = try await baton("run", "-", stdin: "\n\nx = = 1\n")
        #expect(stdin.exitCode == 2, "\(stdin)")
        #expect(stdin.stderr == "stdin:3: unexpected symbol near '='\n", "\(stdin)")
    }

    @Test("a script given with a path is named as given")
    func pathAsGiven() async throws {
        let dir = try ScriptDirectory()
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try dir.write("sub/y.lua", "\nerror('deep')")
        let r = try await dir.baton("run", "./sub/y.lua")
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "./sub/y.lua:2: deep", "\(r)")
    }

    @Test("a missing file with --log-format json is one JSON object")
    func missingFileJSON() async throws {
        let r = try await baton("run", "--log-format", "json", "nosuch.lua")
        #expect(r.exitCode == 2, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1, "\(r)")
        #expect((objects.first?["message"] as? String)?.hasPrefix("cannot open nosuch.lua") == true, "\(r)")
        #expect(objects.first?["level"] as? String == "error")
    }

    @Test("a syntax error with --log-format json is one JSON object")
    func syntaxErrorJSON() async throws {
        let r = try await runScript("local x\nx = = 1\n", name: "bad.lua", flags: ["--log-format", "json"])
        #expect(r.exitCode == 2, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1, "\(r)")
        #expect(objects.first?["message"] as? String == "bad.lua:2: unexpected symbol near '='", "\(r)")
        #expect(objects.first?["level"] as? String == "error")
    }

    @Test("an uncaught error with --log-format json: one object with message, traceback and source")
    func mainErrorJSON() async throws {
        let r = try await runScript(Self.nested, flags: ["--log-format", "json"])
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.count == 1, "the traceback's newlines must be escaped\n\(r)")
        let objects = jsonLines(r.stderr)
        let o = try #require(objects.first)
        #expect(o["level"] as? String == "error")
        #expect(o["message"] as? String == "x.lua:2: boom")
        #expect(o["source"] as? String == "baton")
        #expect(o["task"] == nil, "the main chunk is not a task")
        #expect(o["time"] is String)
        let traceback = try #require(o["traceback"] as? String)
        #expect(traceback.hasPrefix("stack traceback:\n\t"), "\(traceback)")
        #expect(traceback.contains("\tx.lua:2: in local 'f'"), "\(traceback)")
        #expect(traceback.contains("\tx.lua:4: in main chunk"), "\(traceback)")
    }

    @Test("a task's uncaught error with --log-format json carries the task")
    func taskErrorJSON() async throws {
        let r = try await runScript("""
            baton.log.warn("careful", 1)
            local function boom()
              error("boom")
            end
            baton.spawn(boom)
            """, flags: ["--log-format", "json"])
        #expect(r.exitCode == 1, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 2, "\(r)")
        let warning = try #require(objects.first)
        #expect(warning["level"] as? String == "warn")
        #expect(warning["message"] as? String == "careful 1")
        #expect(warning["source"] as? String == "script")
        let failure = try #require(objects.last)
        #expect(failure["level"] as? String == "error")
        #expect(failure["message"] as? String == "x.lua:3: boom")
        #expect(failure["source"] as? String == "baton")
        #expect(failure["task"] as? String == "task 2 (spawned at x.lua:5)")
        #expect((failure["traceback"] as? String)?.hasPrefix("stack traceback:\n\t") == true)
    }

    @Test("a timer's uncaught error with --log-format json carries the timer")
    func timerErrorJSON() async throws {
        let r = try await runScript("""
            baton.after(0, function()
              error("tboom")
            end)
            """, flags: ["--log-format", "json"])
        #expect(r.exitCode == 1, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1, "\(r)")
        #expect(objects.first?["message"] as? String == "x.lua:2: tboom")
        #expect(objects.first?["task"] as? String == "timer 1 (set at x.lua:1)")
    }

    @Test("-q hides logs but never uncaught errors")
    func quietStillReportsErrors() async throws {
        let r = try await runScript("baton.log.info('hidden')\nerror('shown')", flags: ["-q"])
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "x.lua:2: shown", "\(r)")
        #expect(!r.stderr.contains("hidden"))
    }
}
