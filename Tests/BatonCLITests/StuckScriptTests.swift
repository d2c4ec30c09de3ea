import Foundation
import Testing

/// `--timeout` against code that never returns to the Lua VM: a pattern match that backtracks
/// for ever (Baton's matcher checks the deadline as it goes), and a C function that blocks
/// (the watchdog ends the process 2 s after the timeout). Each run is given a wall clock well
/// under what the stuck code would take, so a run that is not stopped fails the test.
@Suite("--timeout inside C functions")
struct StuckScriptTests {
    /// Forty `a*` against forty a's and no c: 2^40 ways to fail under stock Lua.
    static let backtrackingBomb = #"local s = ("a"):rep(40) .. "b"; print(s:find(("a*"):rep(40) .. "c"))"#

    @Test("a pattern that backtracks for ever stops at --timeout: exit 3, 'timeout after 2s'")
    func backtrackingPattern() async throws {
        let r = try await runScript("print('before')\n" + Self.backtrackingBomb + "\nprint('not reached')", flags: ["--timeout", "2s"], limit: 15)
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "before\n", "\(r)")
        #expect(r.stderr == "timeout after 2s\n", "\(r)")
    }

    @Test("pcall cannot swallow the timeout raised inside string.find, gsub's callback or gmatch")
    func pcallAroundPatterns() async throws {
        let r = try await runScript("""
            local s = ("a"):rep(40) .. "b"
            local bomb = ("a*"):rep(40) .. "c"
            for i = 1, 1e9 do
              print(pcall(string.find, s, bomb))
              print(pcall(string.gsub, s, "a", function() return s:match(bomb) end))
              print(pcall(function() for x in s:gmatch(bomb) do end end))
            end
            """, flags: ["--timeout", "1s"], limit: 15)
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "", "\(r)")
        #expect(r.stderr == "timeout after 1s\n", "\(r)")
    }

    /// Each `=` the first `(.-)` stops at sends the second to the end looking for `;`:
    /// n²/2 steps, hours for 600 KB.
    @Test("a 600 KB message of '=' matched with ^(.-)=(.-); stops at --timeout")
    func quadraticMatchOnALargeString() async throws {
        let r = try await runScript("""
            local text = ("="):rep(600 * 1024)
            print(#text)
            print(text:match("^(.-)=(.-);"))
            """, flags: ["--timeout", "1s"], limit: 15)
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "614400\n", "\(r)")
        #expect(r.stderr == "timeout after 1s\n", "\(r)")
    }

    @Test("a script blocked in a C function (opening a FIFO no one writes) is ended by the watchdog: exit 3, its trace ends with run.end timed_out")
    func watchdogEndsABlockedScript() async throws {
        let dir = try ScriptDirectory()
        // fopen blocks until a writer comes, and none does (no child process either, which
        // would outlive baton holding its output open).
        #expect(mkfifo(dir.url.appendingPathComponent("fifo").path, 0o600) == 0)
        try dir.write("x.lua", """
            print("before")
            io.stdout:flush()
            local f = io.open("fifo", "r")
            print("not reached")
            """)
        let r = try await BatonProcess.run(
            ["run", "--timeout", "1s", "--trace", "t.jsonl", "x.lua"], directory: dir.url, limit: 15)
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "before\n", "\(r)")
        #expect(r.stderr.hasPrefix("timeout after 1s"), "\(r)")
        let trace = try String(contentsOf: dir.url.appendingPathComponent("t.jsonl"), encoding: .utf8)
        let records = jsonLines(trace)
        #expect(records.first?["kind"] as? String == "run.start", "\(trace)")
        let last = try #require(records.last, "\(trace)")
        #expect(last["kind"] as? String == "run.end", "\(trace)")
        #expect(last["outcome"] as? String == "timed_out", "\(trace)")
        #expect(last["exit_code"] as? Int == 3, "\(trace)")
    }

    @Test("a script that ends in time is not touched by the watchdog")
    func watchdogLeavesAFinishedRunAlone() async throws {
        let r = try await runScript("""
            os.execute("true")
            print(("key=value;"):match("^(.-)=(.-);"))
            baton.exit(7)
            """, flags: ["--timeout", "1s"])
        #expect(r.exitCode == 7, "\(r)")
        #expect(r.stdout == "key\tvalue\n", "\(r)")
        #expect(r.stderr == "", "\(r)")
    }

    @Test("without --max-memory a script is capped at 1G, and --help says so")
    func defaultMemoryCap() async throws {
        let r = try await runScript("""
            print(pcall(string.rep, "x", 1536 * 1024 * 1024))
            print(#string.rep("y", 64 * 1024 * 1024))
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "false\tnot enough memory\n67108864\n", "\(r)")
        let help = try await baton("run", "--help")
        #expect(help.stdout.contains("capped at 1G"), "\(help)")
        #expect(help.stdout.contains("(default 1G; 0"), "\(help)")
    }
}
