import Testing

/// `baton.sleep`, `baton.spawn` and task handles, `baton.after` and `baton.every`, and when
/// a run ends. Orders are asserted; durations never are.
@Suite("Scheduler")
struct SchedulerTests {
    private func expectOutput(
        _ script: String, _ stdout: String, flags: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let r = try await runScript(script, flags: flags, sourceLocation: sourceLocation)
        #expect(r.exitCode == 0, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stdout == stdout, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr == "", "\(r)", sourceLocation: sourceLocation)
    }

    @Test("tasks start on the next scheduler turn, in spawn order, with their arguments")
    func spawnOrder() async throws {
        try await expectOutput("""
            local order = {}
            for i = 1, 3 do
              baton.spawn(function(x, y) order[#order + 1] = "task" .. x .. y end, i, "!")
            end
            order[#order + 1] = "main"
            baton.sleep(0)
            print(table.concat(order, " "))
            """, "main task1! task2! task3!\n")
    }

    @Test("sleeps wake in deadline order, not in the order they started")
    func sleepOrder() async throws {
        try await expectOutput("""
            local order, handles = {}, {}
            for _, d in ipairs {0.3, 0.1, 0.2, 0.05} do
              handles[#handles + 1] = baton.spawn(function()
                baton.sleep(d)
                order[#order + 1] = tostring(d)
              end)
            end
            for _, h in ipairs(handles) do h:wait() end
            print(table.concat(order, " "))
            """, "0.05 0.1 0.2 0.3\n")
    }

    @Test("baton.sleep(0) lets the other ready tasks run first")
    func sleepZeroYields() async throws {
        try await expectOutput("""
            local order = {}
            local a = baton.spawn(function()
              for i = 1, 3 do order[#order + 1] = "a" .. i baton.sleep(0) end
            end)
            local b = baton.spawn(function()
              for i = 1, 3 do order[#order + 1] = "b" .. i baton.sleep(0) end
            end)
            a:wait() b:wait()
            print(table.concat(order, " "))
            """, "a1 b1 a2 b2 a3 b3\n")
    }

    @Test("h:wait() returns every result of the task, nils included, again and again")
    func waitResults() async throws {
        try await expectOutput("""
            local h = baton.spawn(function(a, b)
              baton.sleep(0.01)
              return a + b, "x", nil
            end, 1, 2)
            print(h:status())
            print(select("#", h:wait()), h:wait())
            print(h:status())
            print(h:wait())
            local empty = baton.spawn(function() end)
            print(select("#", empty:wait()))
            print(tostring(h))
            """, "running\n3\t3\tx\tnil\ndone\n3\tx\tnil\n0\ntask 2\n")
    }

    @Test("h:wait() raises the task's error, which pcall catches with its position")
    func waitRaises() async throws {
        let r = try await runScript("""
            local h = baton.spawn(function()
              baton.sleep(0.01)
              error("boom")
            end)
            print(pcall(h.wait, h))
            print(h:status())
            print(pcall(h.wait, h))
            local t = baton.spawn(function() error({code = 7}) end)
            local ok, e = pcall(t.wait, t)
            print(ok, type(e), e.code)
            """)
        #expect(r.exitCode == 1, "the tasks' errors are still uncaught errors\n\(r)")
        #expect(r.stdout == "false\tx.lua:3: boom\nfailed\nfalse\tx.lua:3: boom\nfalse\ttable\t7\n", "\(r)")
    }

    @Test("many tasks can wait for the same task")
    func manyWaiters() async throws {
        try await expectOutput("""
            local h = baton.spawn(function() baton.sleep(0.01) return "r" end)
            local got = {}
            local waiters = {}
            for i = 1, 3 do
              waiters[i] = baton.spawn(function() local v = h:wait() got[#got + 1] = i .. v end)
            end
            print(h:wait())
            for _, w in ipairs(waiters) do w:wait() end
            print(table.concat(got, ","))
            """, "r\n1r,2r,3r\n")
    }

    @Test("a task that waits for itself gets an error")
    func waitForItself() async throws {
        let r = try await runScript("""
            local h
            h = baton.spawn(function()
              local ok, err = pcall(h.wait, h)
              print(ok, err)
              return h:wait()
            end)
            baton.sleep(0.01)
            print(h:status())
            """)
        #expect(r.exitCode == 1, "\(r)")
        let lines = r.stdoutLines
        #expect(lines.count == 2, "\(r)")
        #expect(lines.first?.hasPrefix("false\t") == true, "\(r)")
        #expect(lines.first?.hasSuffix("a task cannot wait for itself") == true, "\(r)")
        #expect(lines.last == "failed", "\(r)")
        #expect(r.stderr.contains("error in task 2 (spawned at x.lua:2):"), "\(r)")
        #expect(r.stderr.contains("x.lua:5: a task cannot wait for itself"), "\(r)")
    }

    /// Two tasks waiting on each other can never wake. The --timeout is only a limit: a
    /// runtime that misses the deadlock ends with exit 3 instead of hanging the suite.
    @Test("two tasks waiting on each other with nothing else pending: deadlock, exit 1")
    func deadlock() async throws {
        let r = try await runScript("""
            local a, b
            a = baton.spawn(function() baton.sleep(0) return b:wait() end)
            b = baton.spawn(function() baton.sleep(0) return a:wait() end)
            print("main done")
            """, flags: ["--timeout", "3s"])
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "main done\n")
        #expect(r.stderr.hasPrefix("deadlock: "), "\(r)")
        #expect(!r.stderr.contains("timeout"), "\(r)")
    }

    @Test("baton.after runs once, later; its callback gets the timer")
    func after() async throws {
        try await expectOutput("""
            local t
            t = baton.after(0.01, function(timer)
              print("fired", rawequal(timer, t), timer:active())
            end)
            print("pending", t:active())
            baton.sleep(0.05)
            print("later", t:active(), t:stop())
            print(tostring(t))
            """, "pending\ttrue\nfired\ttrue\tfalse\nlater\tfalse\tfalse\ntimer 1\n")
    }

    @Test("stopping a pending timer: stop() is true once, then false; it never fires")
    func stopPending() async throws {
        try await expectOutput("""
            local t = baton.after(0.01, function() print("never") end)
            print(t:stop(), t:active(), t:stop())
            """, "true\tfalse\tfalse\n")
    }

    @Test("a pending timer keeps the run alive after main returns")
    func afterKeepsAlive() async throws {
        try await expectOutput("""
            baton.after(0.05, function() print("timer") end)
            print("main returns")
            """, "main returns\ntimer\n")
    }

    @Test("baton.every repeats until stopped, with the timer as argument")
    func every() async throws {
        try await expectOutput("""
            local n = 0
            local t
            t = baton.every(0.01, function(timer)
              n = n + 1
              print("tick", n, rawequal(timer, t))
              if n == 3 then print("stop", timer:stop(), timer:active()) end
            end)
            print("active", t:active())
            """, "active\ttrue\ntick\t1\ttrue\ntick\t2\ttrue\ntick\t3\ttrue\nstop\ttrue\tfalse\n")
    }

    @Test("a task can stop a repeating timer from outside")
    func stopEveryFromTask() async throws {
        try await expectOutput("""
            local n = 0
            local t = baton.every(0.01, function() n = n + 1 end)
            baton.spawn(function()
              while n < 2 do baton.sleep(0.01) end
              print(t:active(), t:stop(), t:active(), t:stop())
            end)
            """, "true\ttrue\tfalse\tfalse\n")
    }

    @Test("timer callbacks and tasks can sleep, spawn and wait like the main chunk")
    func nested() async throws {
        try await expectOutput("""
            baton.after(0.01, function(t)
              baton.sleep(0.01)
              local h = baton.spawn(function(x) baton.sleep(0.01) return x * 2 end, 21)
              print("timer got", h:wait(), t:active())
            end)
            local h = baton.spawn(function()
              local inner = baton.spawn(function() return "inner" end)
              return inner:wait() .. "!"
            end)
            print(h:wait())
            """, "inner!\ntimer got\t42\tfalse\n")
    }

    @Test("the run waits for sleeping tasks after main returns")
    func waitsForTasks() async throws {
        try await expectOutput("""
            baton.spawn(function() baton.sleep(0.05) print("task done") end)
            print("main done")
            """, "main done\ntask done\n")
    }

    @Test("baton.sleep inside table.sort's comparator raises 'cannot wait here'")
    func sleepInSort() async throws {
        let r = try await runScript("""
            local t = {3, 1, 2}
            table.sort(t, function(a, b) baton.sleep(0) return a < b end)
            print("not reached")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "")
        #expect(r.stderrLines.first?.hasPrefix("x.lua:2: baton.sleep cannot wait here: ") == true, "\(r)")
    }

    @Test("h:wait() inside table.sort's comparator raises 'cannot wait here', catchable")
    func waitInSort() async throws {
        let r = try await runScript("""
            local h = baton.spawn(function() baton.sleep(0.01) return 1 end)
            local t = {3, 1, 2}
            print(pcall(table.sort, t, function(a, b) h:wait() return a < b end))
            print(h:wait())
            """)
        #expect(r.exitCode == 0, "\(r)")
        let lines = r.stdoutLines
        #expect(lines.count == 2, "\(r)")
        #expect(lines.first?.hasPrefix("false\tx.lua:3: ") == true, "\(r)")
        #expect(lines.first?.contains("cannot wait here") == true, "\(r)")
        #expect(lines.last == "1", "\(r)")
    }

    @Test("baton.sleep works inside coroutine.wrap; the script's own yields still reach it")
    func coroutineWrap() async throws {
        try await expectOutput("""
            local co = coroutine.wrap(function(a)
              local b = coroutine.yield(a + 1)
              baton.sleep(0.01)
              local c = coroutine.yield(b * 2)
              baton.sleep(0)
              return "done", c
            end)
            print(co(1))
            print(co(10))
            print(co("z"))
            """, "2\n20\ndone\tz\n")
    }

    @Test("baton.sleep works inside coroutine.resume; status and values are Lua's")
    func coroutineResume() async throws {
        try await expectOutput("""
            local co = coroutine.create(function(x)
              baton.sleep(0.01)
              local y = coroutine.yield(x .. "!")
              local h = baton.spawn(function() return "from task" end)
              local z = h:wait()
              return y .. "?", z
            end)
            print(coroutine.resume(co, "hi"))
            print(coroutine.status(co))
            print(coroutine.resume(co, "yo"))
            print(coroutine.status(co))
            print(coroutine.resume(co))
            """, "true\thi!\nsuspended\ntrue\tyo?\tfrom task\ndead\nfalse\tcannot resume dead coroutine\n")
    }

    @Test("other tasks run while a coroutine inside a task sleeps")
    func coroutineInTask() async throws {
        try await expectOutput("""
            local order = {}
            local a = baton.spawn(function()
              local co = coroutine.wrap(function()
                order[#order + 1] = "co start"
                baton.sleep(0.02)
                order[#order + 1] = "co end"
              end)
              co()
            end)
            local b = baton.spawn(function() order[#order + 1] = "b" end)
            a:wait() b:wait()
            print(table.concat(order, ", "))
            """, "co start, b, co end\n")
    }

    @Test("an error inside a coroutine.wrap'd function reaches the caller")
    func coroutineError() async throws {
        let r = try await runScript("""
            local co = coroutine.wrap(function()
              baton.sleep(0)
              error("inside")
            end)
            print(pcall(co))
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "false\tx.lua:3: inside\n", "\(r)")
    }

    @Test("bad arguments to the scheduler are errors", arguments: [
        ("baton.sleep(-1)", "baton.sleep"), ("baton.sleep('x')", "baton.sleep"),
        ("baton.spawn(1)", "baton.spawn"), ("baton.after(1)", "baton.after"),
        ("baton.every(0, print)", "baton.every"),
    ])
    func badArguments(_ call: String, _ function: String) async throws {
        let r = try await runScript(call)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first?.hasPrefix("x.lua:1: bad argument #") == true, "\(r)")
        #expect(r.stderr.contains(function), "\(r)")
    }
}
