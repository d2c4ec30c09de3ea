import Foundation
import Testing

/// A script that runs under the stock `lua5.4` behaves the same under `baton run`. Each case
/// runs under both, in the same directory under the same name (so positions in messages
/// match), and must print the same and end with the same exit code. The scripts call
/// `wait(0)` (``prologue``: `baton.sleep(0)` under baton, nothing under lua5.4) where a Baton
/// wait inside a coroutine must not change what Lua does. `lua5.4` must be installed:
/// without it these tests fail.
///
/// A task's own coroutine has no counterpart under lua5.4; the last tests pin what it does:
/// the same as the main chunk.
@Suite("Standard Lua: what lua5.4 does")
struct StandardLuaTests {
    struct ReferenceMissing: Error, CustomStringConvertible {
        var description: String
    }

    /// The stock interpreter, from `PATH`.
    static let lua: Result<URL, ReferenceMissing> = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent("lua5.4")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return .success(candidate) }
        }
        return .failure(ReferenceMissing(description:
            "lua5.4 is not on PATH (apt-get install lua5.4): these tests compare baton run with it"))
    }()

    /// Put before every script: `wait(s)` sleeps under baton and does nothing under lua5.4.
    static let prologue = "local wait = baton and baton.sleep or function() end\n"

    /// Runs `script` as `x.lua` under lua5.4 and under `baton run`; expects the same stdout and
    /// exit code, and lua5.4's exit code to be `exitCode`. Returns both runs.
    @discardableResult
    private func expectSameAsLua(
        _ script: String, exitCode: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (lua: BatonResult, baton: BatonResult) {
        let dir = try ScriptDirectory()
        try dir.write("x.lua", Self.prologue + script)
        let lua = try await BatonProcess.run(
            ["x.lua"], program: Self.lua.get(), directory: dir.url, sourceLocation: sourceLocation)
        let baton = try await dir.baton("run", "x.lua", sourceLocation: sourceLocation)
        #expect(lua.exitCode == exitCode, "lua5.4: \(lua)", sourceLocation: sourceLocation)
        #expect(!lua.stdout.isEmpty, "lua5.4 printed nothing: \(lua)", sourceLocation: sourceLocation)
        #expect(baton.stdout == lua.stdout, "lua5.4: \(lua)\nbaton: \(baton)", sourceLocation: sourceLocation)
        #expect(baton.exitCode == lua.exitCode, "lua5.4: \(lua)\nbaton: \(baton)", sourceLocation: sourceLocation)
        return (lua, baton)
    }

    // MARK: the two cases first found

    @Test("coroutine.wrap raises the error of a __close handler that fails, with the caller's position")
    func wrapRaisesCloseHandlerError() async throws {
        let (lua, _) = try await expectSameAsLua("""
            local function closer(err) return setmetatable({}, {__close = function() error(err) end}) end
            local f = coroutine.wrap(function()
              local x <close> = closer("close failed")
              error("body failed")
            end)
            print(pcall(f))
            local g = coroutine.wrap(function()
              local x <close> = closer({code = 7})
              wait(0)
              error("body failed")
            end)
            local ok, e = pcall(g)
            print(ok, type(e), e.code)
            local h = coroutine.wrap(function()
              local x <close> = closer("close failed 2")
              error("body failed")
            end)
            print(pcall(function() return h() end))
            local k = coroutine.wrap(function()
              local a <close> = setmetatable({}, {__close = function(_, err) print("a sees", err) end})
              local b <close> = setmetatable({}, {__close = function(_, err) print("b sees", err) end})
              error("plain")
            end)
            print(pcall(k))
            """)
        #expect(lua.stdout == """
            false\tx.lua:2: close failed
            false\ttable\t7
            false\tx.lua:19: x.lua:2: close failed 2
            b sees\tx.lua:23: plain
            a sees\tx.lua:23: plain
            false\tx.lua:23: plain

            """)
    }

    @Test("the main chunk cannot yield: yield raises, isyieldable is false, running says main")
    func mainChunkCannotYield() async throws {
        let (lua, baton) = try await expectSameAsLua("""
            print(pcall(coroutine.yield))
            print(pcall(coroutine.yield, 1, 2))
            print(coroutine.isyieldable())
            local co, main = coroutine.running()
            print(type(co), main, coroutine.status(co), coroutine.isyieldable(co))
            print(coroutine.resume(co))
            print(pcall(coroutine.close, co))
            print(pcall(function() local x = coroutine.yield() return x end))
            print(pcall(string.gsub, "a", "a", function() return coroutine.yield() end))
            coroutine.wrap(function()
              print("inside", coroutine.isyieldable(), select(2, coroutine.running()), coroutine.status(co))
              print(coroutine.isyieldable(co), coroutine.resume(co))
              print(pcall(coroutine.close, co))
            end)()
            coroutine.yield()
            print("not reached")
            """, exitCode: 1)
        #expect(lua.stdout == """
            false\tattempt to yield from outside a coroutine
            false\tattempt to yield from outside a coroutine
            false
            thread\ttrue\trunning\tfalse
            false\tcannot resume non-suspended coroutine
            false\tcannot close a running coroutine
            false\tattempt to yield from outside a coroutine
            false\tattempt to yield from outside a coroutine
            inside\ttrue\tfalse\tnormal
            false\tfalse\tcannot resume non-suspended coroutine
            false\tcannot close a normal coroutine

            """)
        #expect(lua.stderr.contains("attempt to yield from outside a coroutine"), "\(lua)")
        #expect(baton.stderrLines.first == "attempt to yield from outside a coroutine", "\(baton)")
    }

    // MARK: more of their kind

    @Test("errors leaving coroutine.wrap: strings get the caller's position, other values pass; dead, running and normal coroutines")
    func wrapErrors() async throws {
        try await expectSameAsLua("""
            local function try(label, f, ...) print(label, pcall(f, ...)) end
            local function via(f) return function(...) local r = table.pack(f(...)) return table.unpack(r, 1, r.n) end end
            try("string", coroutine.wrap(function() error("boom") end))
            try("string via Lua", via(coroutine.wrap(function() error("boom") end)))
            try("level 0", via(coroutine.wrap(function() error("bare", 0) end)))
            try("level 2", via(coroutine.wrap(function() error("two", 2) end)))
            try("level 2 nested", via(coroutine.wrap(function() local function f() error("two", 2) end f() end)))
            local tv = {}
            print("table", select(2, pcall(via(coroutine.wrap(function() error(tv) end)))) == tv)
            try("nil", via(coroutine.wrap(function() error() end)))
            try("number", via(coroutine.wrap(function() error(42) end)))
            try("runtime", via(coroutine.wrap(function() local x = nil; return x.y end)))
            try("after wait", via(coroutine.wrap(function() wait(0) error("late") end)))
            local dead = coroutine.wrap(function() return 1 end)
            dead()
            try("dead", dead)
            try("dead via Lua", via(dead))
            local self
            self = coroutine.wrap(function() return self() end)
            try("running", self)
            local outer
            local inner = coroutine.wrap(function() return outer() end)
            outer = coroutine.wrap(function() return inner() end)
            try("normal", via(outer))
            try("bad argument", coroutine.wrap, 1)
            try("no argument", function() return coroutine.wrap() end)
            local once = coroutine.wrap(function() wait(0) error("first") end)
            try("first", via(once))
            try("second", via(once))
            """)
    }

    @Test("coroutine.resume, status, close and isyieldable on user coroutines, with waits inside")
    func resumeStatusClose() async throws {
        try await expectSameAsLua("""
            local co = coroutine.create(function(a, b)
              wait(0)
              print("got", a, b)
              local c, d = coroutine.yield(a + b, "y")
              wait(0)
              print("then", c, d)
              return "done", nil, 3
            end)
            print(coroutine.status(co))
            print(coroutine.resume(co, 1, 2))
            print(coroutine.status(co))
            print(coroutine.resume(co, "x"))
            print(coroutine.status(co))
            print(coroutine.resume(co))
            print(coroutine.close(co))
            print(pcall(coroutine.resume, 1))
            print(pcall(coroutine.resume))
            print(pcall(coroutine.status, {}))
            print(pcall(coroutine.close, "x"))
            print(pcall(coroutine.isyieldable, 1))
            local err = coroutine.create(function() wait(0) error({msg = "t"}) end)
            local ok, e = coroutine.resume(err)
            print(ok, type(e), e.msg, coroutine.status(err))
            print(coroutine.close(err) == false, select(2, coroutine.close(err)) == e)
            print(coroutine.resume(coroutine.create(function() error("lvl", 2) end)))
            local str = coroutine.create(function() error("str") end)
            print(coroutine.resume(str))
            print(coroutine.close(str))
            print(coroutine.status(str))
            local a
            local b = coroutine.create(function()
              print("a from b", coroutine.status(a))
              print(coroutine.resume(a))
              print(pcall(coroutine.close, a))
              return "b done"
            end)
            a = coroutine.create(function()
              print("a itself", coroutine.status(a), coroutine.isyieldable(), select(2, coroutine.running()))
              print(coroutine.resume(a))
              print(pcall(coroutine.close, a))
              wait(0)
              return coroutine.resume(b)
            end)
            print(coroutine.resume(a))
            print(coroutine.isyieldable(a), coroutine.isyieldable(coroutine.create(print)))
            local many = coroutine.create(function(...) wait(0) return select("#", ...), ... end)
            print(coroutine.resume(many, nil, nil, 3, nil))
            """)
    }

    @Test("coroutine.close runs pending __close handlers; the error one raises is returned")
    func closeRunsPendingHandlers() async throws {
        try await expectSameAsLua("""
            local function closer(name, err)
              return setmetatable({}, {__close = function(_, e)
                print("closing", name, e)
                if err then error(err, 0) end
              end})
            end
            local co = coroutine.create(function()
              local a <close> = closer("a")
              local b <close> = closer("b", "b failed")
              local c <close> = closer("c")
              wait(0)
              coroutine.yield(1)
            end)
            print(coroutine.resume(co))
            print(coroutine.close(co))
            print(coroutine.status(co))
            print(coroutine.resume(co))
            local tab = coroutine.create(function()
              local a <close> = closer("t", {why = "table"})
              coroutine.yield()
            end)
            coroutine.resume(tab)
            local ok, e = coroutine.close(tab)
            print(ok, type(e), e.why)
            local fine = coroutine.create(function()
              local a <close> = closer("fine")
              coroutine.yield()
            end)
            coroutine.resume(fine)
            print(coroutine.close(fine))
            print(coroutine.close(coroutine.create(print)))
            local failed = coroutine.create(function()
              local a <close> = closer("late")
              error("oops", 0)
            end)
            print(coroutine.resume(failed))
            print("before close")
            print(coroutine.close(failed))
            local w = coroutine.wrap(function()
              local a <close> = closer("w")
              wait(0)
              error("w failed", 0)
            end)
            print(pcall(w))
            """)
    }

    @Test("yields inside a user coroutine cross pcall, xpcall, metamethods and for iterators, not table.sort")
    func yieldsAcrossCalls() async throws {
        try await expectSameAsLua("""
            local gen = coroutine.wrap(function()
              local ok, v = pcall(function()
                wait(0)
                local x = coroutine.yield("in pcall")
                wait(0)
                error("after " .. x, 0)
              end)
              print("pcall gave", ok, v)
              print(xpcall(function() return coroutine.yield("in xpcall") end, function(m) return "handled " .. m end))
              print(xpcall(function() wait(0) coroutine.yield("in xpcall 2") error("x") end, function(m) return "handled " .. m end))
              local t = setmetatable({}, {__index = function(_, k) wait(0) return coroutine.yield("index " .. k) end,
                                          __add = function(a, b) return coroutine.yield("add") end})
              print("meta", t.foo, t + 1)
              print(pcall(coroutine.yield, "pcall(yield)"))
              print(select("#", coroutine.yield()))
              return "end"
            end)
            print(gen())
            print(gen("X"))
            print(gen("xp"))
            print(gen())
            print(gen("FOO"))
            print(gen("ADD"))
            print(gen("p1", "p2"))
            print(gen(nil, nil))
            for v in coroutine.wrap(function() for i = 1, 3 do wait(0) coroutine.yield(i) end end) do print("for", v) end
            print(coroutine.wrap(function()
              print(pcall(table.sort, {3, 1, 2}, function(a, b) coroutine.yield() return a < b end))
              print(pcall(table.sort, {2, 1}, function(a, b) print("in sort", coroutine.isyieldable()) return a < b end))
              return "sorted"
            end)())
            """)
    }

    @Test("a wait inside coroutine.wrap inside pcall, nested and under resume, leaves Lua's results as they are")
    func waitInWrapInPcall() async throws {
        try await expectSameAsLua("""
            local f = coroutine.wrap(function(a)
              wait(0)
              local b = coroutine.yield(a * 2)
              wait(0)
              return a + b
            end)
            print(pcall(f, 5))
            print(pcall(f, 7))
            print(pcall(f))
            local outer = coroutine.wrap(function()
              local inner = coroutine.wrap(function()
                wait(0)
                coroutine.yield("inner 1")
                wait(0)
                error("inner failed")
              end)
              print("outer got", inner())
              coroutine.yield("outer 1")
              print("outer got", pcall(inner))
              wait(0)
              return "outer done"
            end)
            print(pcall(outer))
            print(pcall(outer))
            print(select("#", pcall(outer)))
            local co = coroutine.create(function()
              print(pcall(function() wait(0) return coroutine.yield("from pcall") end))
              print(xpcall(function() wait(0) error({}) end, function(e) return type(e) end))
            end)
            print(coroutine.resume(co))
            print(coroutine.resume(co, "back"))
            print(coroutine.status(co))
            """)
    }

    @Test("error levels in the main chunk give lua5.4's positions")
    func errorLevelsInMainChunk() async throws {
        let (_, baton) = try await expectSameAsLua("""
            print(pcall(error, "lvl1"))
            print(pcall(error, "lvl2", 2))
            print(pcall(function() error("f2", 2) end))
            print(select(2, pcall(function() local function g() error("g2", 2) end g() end)))
            error("top", 2)
            """, exitCode: 1)
        #expect(baton.stderrLines.first == "top", "\(baton)")
    }

    @Test("a failing main chunk closes its to-be-closed variables; an error a __close handler raises replaces its own")
    func failingMainChunkCloses() async throws {
        // lua5.4's handlers see the error with a traceback appended (its message handler ran
        // first): print the first line only.
        try await expectSameAsLua("""
            local x <close> = setmetatable({}, {__close = function(_, e) print("closed with", (e:match("^[^\\n]*"))) end})
            print("running")
            error("main failed")
            """, exitCode: 1)
        let (lua, baton) = try await expectSameAsLua("""
            local x <close> = setmetatable({}, {__close = function(_, e)
              print("closing with", (e:match("^[^\\n]*")))
              error("close failed")
            end})
            error("main failed")
            """, exitCode: 1)
        #expect(lua.stderr.contains("x.lua:4: close failed"), "\(lua)")
        #expect(baton.stderrLines.first == "x.lua:4: close failed", "\(baton)")
    }

    // MARK: a task's own coroutine, which lua5.4 does not have: it is like the main chunk

    @Test("a spawned task and a timer callback cannot yield: yield raises, isyieldable is false, running says main")
    func tasksCannotYield() async throws {
        let r = try await runScript("""
            local function probe(where)
              local co, main = coroutine.running()
              print(where, select(2, pcall(coroutine.yield)), coroutine.isyieldable(), main, coroutine.status(co))
            end
            baton.spawn(probe, "task"):wait()
            baton.after(0, function() probe("timer") end)
            baton.sleep(0.01)
            local t = baton.spawn(function() coroutine.yield() return "not reached" end)
            print(pcall(t.wait, t))
            """)
        #expect(r.exitCode == 1, "the task's error is uncaught\n\(r)")
        #expect(r.stdout == """
            task\tattempt to yield from outside a coroutine\tfalse\ttrue\trunning
            timer\tattempt to yield from outside a coroutine\tfalse\ttrue\trunning
            false\tattempt to yield from outside a coroutine

            """, "\(r)")
        #expect(r.stderr.contains("error in task 4 (spawned at x.lua:8):\nattempt to yield from outside a coroutine\n"), "\(r)")
    }

    @Test("another task's coroutine, or a coroutine waiting in baton.sleep, is normal: it cannot be resumed or closed")
    func busyCoroutinesAreNormal() async throws {
        let r = try await runScript("""
            local main = coroutine.running()
            local other = baton.spawn(function()
              print("main", coroutine.status(main), coroutine.resume(main))
              print(pcall(coroutine.close, main))
            end)
            other:wait()
            local sleeper = coroutine.create(function() baton.sleep(0.05) return "slept" end)
            local peek = baton.spawn(function()
              baton.sleep(0)
              print("sleeper", coroutine.status(sleeper), coroutine.resume(sleeper))
              print(pcall(coroutine.close, sleeper))
            end)
            print(coroutine.resume(sleeper))
            peek:wait()
            local gen = coroutine.wrap(function() while true do baton.sleep(0.02) coroutine.yield("item") end end)
            local a = baton.spawn(function() return gen() end)
            local b = baton.spawn(function() baton.sleep(0) return pcall(gen) end)
            print(a:wait())
            print(b:wait())
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == """
            main\tnormal\tfalse\tcannot resume non-suspended coroutine
            false\tcannot close a normal coroutine
            sleeper\tnormal\tfalse\tcannot resume non-suspended coroutine
            false\tcannot close a normal coroutine
            true\tslept
            item
            false\tcannot resume non-suspended coroutine

            """, "\(r)")
    }

    @Test("a failing task closes its to-be-closed variables before h:wait() raises")
    func failingTaskCloses() async throws {
        let r = try await runScript("""
            local t = baton.spawn(function()
              local x <close> = setmetatable({}, {__close = function(_, e) print("closing with", e) end})
              error("task failed", 0)
            end)
            print(pcall(t.wait, t))
            local u = baton.spawn(function()
              local x <close> = setmetatable({}, {__close = function() error("close failed", 0) end})
              error("task failed", 0)
            end)
            print(pcall(u.wait, u))
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "closing with\ttask failed\nfalse\ttask failed\nfalse\tclose failed\n", "\(r)")
    }

    // MARK: patterns (Baton's own matcher, baton_pattern.c)

    /// Baton replaces string.find, match, gmatch and gsub with a matcher that stops at a
    /// deadline; scripts must not see any other difference: results, captures, positions,
    /// init, plain, replacement strings, tables and functions, and every error's words.
    @Test("string.find, match, gmatch and gsub: the same results and errors as lua5.4 over many subjects and patterns")
    func patterns() async throws {
        let (lua, _) = try await expectSameAsLua(#"""
            local function show(...)
              local t = table.pack(...)
              for i = 1, t.n do t[i] = tostring(t[i]) end
              return table.concat(t, ",", 1, t.n)
            end
            local function try(f, ...)
              local r = table.pack(pcall(f, ...))
              if r[1] then return show(table.unpack(r, 2, r.n)) end
              return "error: " .. tostring(r[2])
            end
            local subjects = {"", "a", "hello world", "  x = 1; y=22;  ", "THE (quick) fox", "[[x]]", "f(a(b)c)d",
              "a.b-c+d*e?f", "aaa", "ab12cd345", "\0a\0b", "caf\195\169 \t\n end", "key=value;k2=v2;", "%d%s", "^$"}
            local patterns = {"", "a", ".", "%a+", "%A+", "%c", "%C+", "%d+", "%D+", "%g+", "%G", "%l+", "%L+", "%p+", "%P+",
              "%s+", "%S+", "%u+", "%U+", "%w+", "%W+", "%x+", "%X+", "%.", "%%", "[%a_][%w_]*", "[^%s]+", "[a-c]+", "[]]", "[^]]+",
              "[a-]", "[-a]+", "[%]]", "[%-]", "a*", "a+", "a-", "a?", "a-b", ".-", ".*", "^a", "^(a+)", "a$", "^$", "$", "^",
              "(a)(b)", "()a()", "(a*(.)%w(%s*))", "%b()", "%b[]", "%bxy", "%f[%w]%w+", "%f[%W]", "%f[%a]", "%f[^%z]",
              "(%a)%1", "(.)%1", "((%a)%2)", "^(.-)=(.-);", "(%w+)=(%w+)", "%s*(%S+)%s*", "x%$", "a$b", "%^", "[%a%d]+",
              "[^%a%d]", "[a-z%-]+", "l+", "o", "(o)", "(h)(e)(l)", "(%d)(%d)", "%z", "[%z]", "\0", "%0", "()", "(()())",
              "%f[%l]", "[A-Z]+", "q?u?i?c?k?", "^%s*$", ".-$", "(.-)%s", "[.]", "[+*]", "%?"}
            local bad = {"[a", "%", "(a", "a)", "%b", "%ba", "%f", "%fa", "%1", "(a)%2", "(a%1)", "[%", "[^", "((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))"}
            for _, s in ipairs(subjects) do
              for _, p in ipairs(patterns) do
                print(("%q %q"):format(s, p), try(string.find, s, p), try(string.match, s, p),
                  try(string.gsub, s, p, "<%0>"), try(string.find, s, p, 3), try(string.find, s, p, -2),
                  try(string.match, s, p, 100), try(string.find, s, p, 0), try(string.find, s, p, 1, true))
                local out = {}
                local ok, e = pcall(function() for a, b in s:gmatch(p) do out[#out + 1] = show(a, b) end end)
                print("gmatch", ok and table.concat(out, "|") or e)
                out = {}
                ok, e = pcall(function() for a in s:gmatch(p, 4) do out[#out + 1] = show(a) end end)
                print("gmatch4", ok and table.concat(out, "|") or e)
                print("gsub1", try(string.gsub, s, p, "%%", 1), try(string.gsub, s, p, "[%1]", 2))
                print("gsubf", try(string.gsub, s, p, function(a, b) if a == "a" then return nil end return "{" .. tostring(a) .. tostring(b) .. "}" end))
                print("gsubt", try(string.gsub, s, p, {a = "A", l = false, o = 0, [""] = "E"}))
              end
            end
            for _, p in ipairs(bad) do
              print(p, try(string.find, "aaa", p), try(string.match, "x(a)", p), try(string.gsub, "aaa", p, "x"),
                pcall(function() for x in ("aaa"):gmatch(p) do end end))
            end
            print(try(string.gsub, "abc", "%w", "%2"), try(string.gsub, "abc", "(%w)", "%2"), try(string.gsub, "abc", "%w", "%"),
              try(string.gsub, "abc", "%w", "%x"), try(string.gsub, "abc", "%w"), try(string.gsub, "abc", "%w", true),
              try(string.gsub, "abc", "%w", function() return {} end), try(string.gsub, "abc", "%w", 5), try(string.gsub, "abc", "(%w)()", "%2"),
              try(string.gsub, "abc", "", "-"), try(string.gsub, "abc", "b*", "-"), try(string.gsub, "abc", "^", "-"), try(string.gsub, "abc", "$", "-"),
              try(string.gsub, "abc", "x*", "-", 2), try(string.gsub, "abc", ".", {a = 1.5, b = 2}), try(string.gsub, "hello", "(l)(l)", "%2%1%0"),
              try(string.find, "abc", "b", -100), try(string.find, "abc", "", 10), try(string.find, "abc", "", 4), try(string.find, "a.b", ".", 1, true),
              try(string.find, "abc", "c", math.mininteger), try(string.match, "  x", "()x()"), try(string.gsub, "abc", "%w", "%1"),
              try(string.find, 123, 2), try(string.find, "abc"), try(string.gmatch, "abc"), try(string.gsub, "x", "x", "y", -1),
              try(string.rep("a", 300).find, string.rep("a", 300), string.rep("a?", 300) .. string.rep("a", 300)))
            for k, v in string.gmatch("a=1, b=2, c=3", "(%w+)=(%w+)") do print(k, v) end
            for w in string.gmatch("one two three", "%a+", -5) do print(w) end
            print(("x"):rep(10):gsub("x", "%%1"))
            print(string.format("%q", ("\0\1abc"):gsub("%c", "?")))
            print(pcall(string.match, string.rep("a", 1000), string.rep("(", 40) .. "a" .. string.rep(")", 40)))
            print(pcall(string.match, string.rep("x", 300), string.rep(".?", 250)))
            """#)
        #expect(lua.stdout.split(separator: "\n").count > 8000, "\(lua.stdout.prefix(200))")
    }
}
