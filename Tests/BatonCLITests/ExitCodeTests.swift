import Testing

/// `baton run`'s exit codes: 0 success, 1 uncaught error, 2 usage or a script that does not
/// load, 3 timeout, n for `baton.exit(n)`; an uncaught error with a class, its class's code.
@Suite("Exit codes")
struct ExitCodeTests {
    @Test("a script that ends normally exits 0 with its output on stdout only")
    func success() async throws {
        let r = try await runScript("print('hello') print(1 + 1)")
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "hello\n2\n")
        #expect(r.stderr == "")
    }

    @Test("an uncaught error in the main chunk exits 1 and stops the script there")
    func mainError() async throws {
        let r = try await runScript("""
            print("before")
            error("boom")
            print("after")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "before\n")
        #expect(r.stderr.hasPrefix("x.lua:2: boom\n"), "\(r)")
    }

    @Test("an error in a task does not stop the run, but the exit code becomes 1")
    func taskErrorGoesOn() async throws {
        let r = try await runScript("""
            baton.spawn(function() error("task boom") end)
            baton.sleep(0.01)
            print("main goes on")
            baton.spawn(function() print("later task runs") end)
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "main goes on\nlater task runs\n")
        #expect(r.stderr.contains("x.lua:1: task boom"), "\(r)")
    }

    @Test("an error in a timer does not stop the run, but the exit code becomes 1")
    func timerErrorGoesOn() async throws {
        let r = try await runScript("""
            baton.after(0.01, function() error("timer boom") end)
            baton.sleep(0.05)
            print("main goes on")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "main goes on\n")
        #expect(r.stderr.contains("x.lua:1: timer boom"), "\(r)")
    }

    @Test("an error caught with pcall leaves the exit code at 0")
    func caughtError() async throws {
        let r = try await runScript("""
            print(pcall(error, "caught"))
            local h = baton.spawn(function() return 1 end)
            print(h:wait())
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "false\tcaught\n1\n")
        #expect(r.stderr == "")
    }

    @Test("baton.exit(n) ends the run at once with that code", arguments: [
        ("baton.exit()", Int32(0)), ("baton.exit(nil)", 0), ("baton.exit(true)", 0), ("baton.exit(false)", 1),
        ("baton.exit(0)", 0), ("baton.exit(7)", 7), ("baton.exit(42)", 42), ("baton.exit(255)", 255),
    ])
    func exitCode(_ call: String, _ expected: Int32) async throws {
        let r = try await runScript("print('before')\n\(call)\nprint('after')")
        #expect(r.exitCode == expected, "\(r)")
        #expect(r.stdout == "before\n")
        #expect(r.stderr == "")
    }

    @Test("baton.exit with a code outside 0...255 is an error: exit 1", arguments: ["300", "-1", "256"])
    func exitOutOfRange(_ code: String) async throws {
        let r = try await runScript("baton.exit(\(code))\nprint('after')")
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "")
        #expect(r.stderr.hasPrefix("x.lua:1: "), "\(r)")
        #expect(r.stderr.contains("baton.exit"), "\(r)")
    }

    @Test("baton.exit from a task, a timer or inside pcall ends the whole run")
    func exitFromAnywhere() async throws {
        let fromTask = try await runScript("""
            baton.spawn(function() baton.exit(9) end)
            baton.sleep(5)
            print("not reached")
            """)
        #expect(fromTask.exitCode == 9, "\(fromTask)")
        #expect(fromTask.stdout == "")

        let fromTimer = try await runScript("""
            baton.after(0.01, function() baton.exit(6) end)
            baton.sleep(5)
            print("not reached")
            """)
        #expect(fromTimer.exitCode == 6, "\(fromTimer)")
        #expect(fromTimer.stdout == "")

        let inPcall = try await runScript("""
            print(pcall(baton.exit, 5))
            print("not reached")
            """)
        #expect(inPcall.exitCode == 5, "\(inPcall)")
        #expect(inPcall.stdout == "")
    }

    @Test("usage errors exit 2", arguments: [
        ["run", "--bogus", "x.lua"],
        ["run", "--timeout", "abc", "x.lua"],
        ["run", "--timeout", "-1s", "x.lua"],
        ["run", "--timeout", "5 s", "x.lua"],
        ["run", "--max-memory", "12Q", "x.lua"],
        ["run", "--log-format", "xml", "x.lua"],
        ["run", "-q", "-v", "x.lua"],
        ["run"],
        ["run", "--timeout"],
    ])
    func usage(_ arguments: [String]) async throws {
        let dir = try ScriptDirectory()
        try dir.write("x.lua", "print('ran')")
        let r = try await BatonProcess.run(arguments, directory: dir.url)
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stdout == "", "the script must not run")
        #expect(!r.stderr.isEmpty)
    }

    @Test("a bad --timeout names the value it did not understand")
    func badTimeoutMessage() async throws {
        let r = try await baton("run", "--timeout", "soon", "-e", "print(1)")
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stderr.contains("soon"), "\(r)")
        #expect(r.stdout == "")
    }

    @Test("a missing script exits 2 and says what is missing")
    func missingScript() async throws {
        let r = try await baton("run")
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stderr.lowercased().contains("script"), "\(r)")
    }

    @Test("a file that does not exist exits 2: cannot open nosuch.lua")
    func missingFile() async throws {
        let r = try await baton("run", "nosuch.lua")
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stderr.hasPrefix("cannot open nosuch.lua"), "\(r)")
        #expect(r.stdout == "")
    }

    @Test("a syntax error exits 2 before anything runs")
    func syntaxError() async throws {
        let r = try await runScript("print('must not run')\nx = = 1\n", name: "bad.lua")
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stdout == "")
        #expect(r.stderr == "bad.lua:2: unexpected symbol near '='\n", "\(r)")
    }

    @Test("io.write output without a newline is flushed on every way out", arguments: [
        ("", Int32(0)), ("error('x')", 1), ("baton.exit(4)", 4), ("baton.spawn(function() baton.exit(5) end) baton.sleep(5)", 5),
        ("while true do end", 3),
    ])
    func flushedOnExit(_ ending: String, _ code: Int32) async throws {
        let r = try await runScript("""
            for i = 1, 20000 do io.write(i, ",") end
            io.write("partial")
            \(ending)
            """, flags: ["--timeout", "1s"])
        #expect(r.exitCode == code, "\(r.exitCode) \(r.stderr)")
        let expected = (1...20000).map(String.init).joined(separator: ",") + ",partial"
        #expect(r.stdout.count == expected.count, "stdout has \(r.stdout.count) characters, ends \(r.stdout.suffix(30))")
        let complete = r.stdout == expected
        #expect(complete, "stdout ends \(r.stdout.suffix(30))")
    }

    @Test("a timeout exits 3")
    func timeout() async throws {
        let r = try await runScript("while true do end", flags: ["--timeout", "500ms"])
        #expect(r.exitCode == 3, "\(r)")
    }

    @Test("an uncaught error of a class exits with the class's code", arguments: [
        ("baton.error('not_found', 'no TV')", Int32(68), "x.lua:1: no TV"),
        ("baton.error('unavailable', 'the TV is off')", 69, "x.lua:1: the TV is off"),
        ("baton.error('lock_held', 'another run has it')", 75, "x.lua:1: another run has it"),
        ("baton.error('denied', 'not ours')", 77, "x.lua:1: not ours"),
        ("baton.error('timeout', 'too slow')", 3, "x.lua:1: too slow"),
        ("baton.error('batch', 'too many failures')", 4, "x.lua:1: too many failures"),
        ("baton.check('remote_system_unavailable', 'no route')", 69, "x.lua:1: remote_system_unavailable: no route"),
        ("baton.check('denied_by_remote_system')", 77, "x.lua:1: denied_by_remote_system"),
        // The cause a request returns after its detail decides, never the detail's words.
        ("baton.check('unknown', 'no answer within 1s', 'timed_out')", 3, "x.lua:1: unknown: no answer within 1s"),
        ("baton.check('unknown', 'timed out: the words alone')", 1, "x.lua:1: unknown: timed out"),
        ("baton.check('not_authorized', 'another account', 'denied')", 77, "x.lua:1: not_authorized: another account"),
        ("baton.check('success', '', 'timed_out')", 0, ""),
        ("baton.check('failure', 'the provider broke')", 1, "x.lua:1: failure: the provider broke"),
        ("baton.find('Nowhere TV', {timeout = 0.2, required = true})", 68, "x.lua:1: no device named or with the id \"Nowhere TV\" was found"),
        ("baton.find('127.0.0.1:9', {required = true})", 69, "x.lua:1: no agent of this account answers at 127.0.0.1:9"),
    ])
    func classedErrors(script: String, code: Int32, message: String) async throws {
        let r = try await runScript(script, flags: ["--no-mdns", "--insecure"])
        #expect(r.exitCode == code, "\(r)")
        #expect(r.stderr.hasPrefix(message), "\(r)")
    }

    @Test("a classed error caught with pcall says its class in err.class and its message in tostring(err); the first uncaught one decides")
    func classedErrorsInLua() async throws {
        let r = try await runScript("""
            local ok, err = pcall(baton.error, "unavailable", "off")
            print(ok, err.class, tostring(err))
            print(baton.check("success"))
            local ok2, err2 = pcall(function() baton.check("not_authorized", "no") end)
            print(err2.class, tostring(err2))
            baton.spawn(function() baton.error("denied", "first") end)
            baton.sleep(0.01)
            error("plain, second")
            """)
        #expect(r.stdout == "false\tunavailable\toff\nsuccess\ndenied\tx.lua:4: not_authorized: no\n", "\(r)")
        #expect(r.exitCode == 77, "\(r)")
    }

    @Test("baton.error and baton.check refuse what is not a class or a status")
    func classedErrorMistakes() async throws {
        let r = try await runScript("baton.error('oops', 'x')")
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderr.contains("bad argument #1 to 'baton.error' (error class expected"), "\(r)")
    }
}
