import Testing

/// `--max-memory SIZE` caps the Lua heap: allocations past it fail as "not enough memory",
/// which pcall can catch.
@Suite("--max-memory")
struct MemoryLimitTests {
    @Test("a script that runs out catches 'not enough memory' and can allocate again")
    func recovers() async throws {
        let r = try await runScript("""
            local ok, err = pcall(function()
              local t = {}
              for i = 1, 1e8 do t[i] = ("x"):rep(100) .. i end
            end)
            print(ok, err)
            collectgarbage()
            local t = {}
            for i = 1, 1000 do t[i] = ("y"):rep(100) .. i end
            print(#t, #t[1000])
            """, flags: ["--max-memory", "16M"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "false\tnot enough memory\n1000\t104\n", "\(r)")
        #expect(r.stderr == "", "\(r)")
    }

    @Test("an uncaught out-of-memory error exits 1 with 'not enough memory' on stderr")
    func uncaught() async throws {
        let r = try await runScript("""
            print("before")
            local s = string.rep("x", 1e9)
            print("not reached", #s)
            """, flags: ["--max-memory", "16M"])
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "before\n")
        #expect(r.stderrLines.first == "not enough memory", "\(r)")
        #expect(r.stderr.contains("stack traceback:"), "\(r)")
    }

    @Test("with --log-format json the out-of-memory error is one JSON object")
    func uncaughtJSON() async throws {
        let r = try await runScript("local s = string.rep('x', 1e9)", flags: ["--max-memory", "64M", "--log-format", "json"])
        #expect(r.exitCode == 1, "\(r)")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1, "\(r)")
        #expect(objects.first?["message"] as? String == "not enough memory")
        #expect(objects.first?["level"] as? String == "error")
    }

    @Test("the limit applies inside tasks too; the task fails, main goes on")
    func inTask() async throws {
        let r = try await runScript("""
            local h = baton.spawn(function()
              return #string.rep("x", 1e9)
            end)
            print(pcall(h.wait, h))
            print("main goes on")
            """, flags: ["--max-memory", "16M"])
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "false\tnot enough memory\nmain goes on\n", "\(r)")
        #expect(r.stderr.contains("error in task 2 (spawned at x.lua:1):\nnot enough memory\n"), "\(r)")
    }

    @Test("the same allocation succeeds under a larger limit or without one", arguments: [["--max-memory", "64M"], []])
    func underTheLimit(_ flags: [String]) async throws {
        let r = try await runScript("local s = string.rep('x', 20 * 1024 * 1024) print(#s)", flags: flags)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "\(20 * 1024 * 1024)\n", "\(r)")
    }

    @Test("sizes are read in binary units", arguments: ["512K", "64M", "1G", "64MB", "64MiB", "1048576"])
    func units(_ size: String) async throws {
        let r = try await runScript("print('ran')", flags: ["--max-memory", size])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "ran\n", "\(r)")
    }

    @Test("a limit of 16M refuses a 20M string, so it is not read as 16 bytes or 16 KB × 1000")
    func sixteenMegabytes() async throws {
        let r = try await runScript(
            "print(pcall(string.rep, 'x', 20 * 1024 * 1024)) print(#string.rep('x', 1024 * 1024))",
            flags: ["--max-memory", "16M"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "false\tnot enough memory\n1048576\n", "\(r)")
    }

    /// A limit too small for baton's own setup must end in an ordinary error, not a crash.
    @Test("a limit too small to start the script fails cleanly", arguments: ["16K", "1K"])
    func tooSmallToStart(_ size: String) async throws {
        let r = try await runScript("print('ran')", flags: ["--max-memory", size])
        #expect(r.exitCode == 1 || r.exitCode == 2, "\(r)")
        #expect(r.stdout == "")
        #expect(r.stderr.contains("not enough memory"), "\(r)")
        #expect(!r.stderr.contains("Fatal error"), "\(r)")
    }
}
