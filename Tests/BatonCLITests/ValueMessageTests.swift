import Testing

/// `baton.message`, `baton.date`, `baton.uuid`, `baton.bytes` and `baton.array` as a script
/// sees them.
@Suite("Values and messages")
struct ValueMessageTests {
    private func expectOutput(
        _ script: String, _ stdout: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let r = try await runScript(script, sourceLocation: sourceLocation)
        #expect(r.exitCode == 0, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stdout == stdout, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr == "", "\(r)", sourceLocation: sourceLocation)
    }

    @Test("baton.message refuses what cannot be sent, naming the place", arguments: [
        (#"{ items = {"a", "b", 3} }"#, "message.items[3]: expected string like items[1], got number"),
        ("{ f = function() end }", "message.f: cannot send a function"),
        ("(function() local x = {} x.self = x return { x = x } end)()", "message.x.self: cycle: the table contains itself"),
        ("{ [1] = 1, a = 2 }", #"message: mixed keys [1] and "a": "#),
        ("{ a = {1, 2, nil, 4} }", "message.a: array has holes: "),
        ("{ [true] = 1 }", "message: key true (boolean) is not a string: dictionary keys must be strings"),
        (#"{ a = 1, b = { c = { d = {"x", 1} } } }"#, "message.b.c.d[2]: expected string like d[1], got number"),
        (#"{ ["a b"] = {1, "x"} }"#, #"message["a b"][2]: expected number like ["a b"][1], got string"#),
        ("{ list = { {a = 1}, 2 } }", "message.list[2]: expected dictionary like list[1], got number"),
        ("{ co = coroutine.create(print) }", "message.co: cannot send a thread"),
    ])
    func refuses(_ table: String, _ message: String) async throws {
        let r = try await runScript("""
            local ok, err = pcall(function() return baton.message(\(table)) end)
            print(ok)
            print(err)
            """)
        #expect(r.exitCode == 0, "\(r)")
        let lines = r.stdoutLines
        #expect(lines.first == "false", "\(r)")
        #expect(lines.dropFirst().first?.hasPrefix("x.lua:1: " + message) == true, "\(r)")
    }

    @Test("a message must be a dictionary, not an array")
    func notAnArray() async throws {
        let r = try await runScript("""
            local ok, err = pcall(function() return baton.message({ 1, 2, 3 }) end)
            print(ok)
            print(err)
            print(baton.message({}) ~= nil)
            """)
        #expect(r.exitCode == 0, "\(r)")
        let lines = r.stdoutLines
        #expect(lines.first == "false", "\(r)")
        let err = lines.dropFirst().first ?? ""
        #expect(err.hasPrefix("x.lua:1: message"), "\(r)")
        #expect(err.contains("dictionary"), "\(r)")
        #expect(lines.last == "true", "an empty table is an empty dictionary\n\(r)")
    }

    @Test("an uncaught message error is an ordinary error with its line")
    func uncaught() async throws {
        let r = try await runScript("""
            local m = { ok = 1 }
            baton.message({ f = print })
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stderrLines.first == "x.lua:2: message.f: cannot send a function", "\(r)")
    }

    @Test("baton.message returns a checked copy, keeping integers and floats apart")
    func copy() async throws {
        try await expectOutput("""
            local orig = { i = 1, f = 1.5, whole = 2.0, mixed = {1, 2.5}, ints = {1, 2}, s = "s", b = false,
                           nested = { deep = { "a", "b" } }, empty = {} }
            local m = baton.message(orig)
            print(rawequal(m, orig), rawequal(m.nested, orig.nested))
            print(math.type(m.i), math.type(m.f), math.type(m.whole))
            print(math.type(m.ints[1]), math.type(m.ints[2]))
            print(math.type(m.mixed[1]), math.type(m.mixed[2]), m.mixed[1], m.mixed[2])
            print(m.s, m.b, m.nested.deep[2], #m.nested.deep, next(m.empty))
            orig.nested.deep[1] = "changed"
            print(m.nested.deep[1])
            """, """
            false\tfalse
            integer\tfloat\tfloat
            integer\tinteger
            float\tfloat\t1.0\t2.5
            s\tfalse\tb\t2\tnil
            a

            """)
    }

    @Test("baton.message keeps dates, uuids, bytes and empty arrays")
    func specialValues() async throws {
        try await expectOutput("""
            local m = baton.message {
              d = baton.date(0), u = baton.uuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
              b = baton.bytes("hi"), e = baton.array {}, ds = { baton.date(60), baton.date(120) },
            }
            print(m.d, m.u, m.b, #m.b, m.ds[2])
            print(baton.json.encode(m))
            """, """
            1970-01-01T00:00:00Z\t6ba7b810-9dad-11d1-80b4-00c04fd430c8\thi\t2\t1970-01-01T00:02:00Z
            {"b":"aGk=","d":"1970-01-01T00:00:00Z","ds":["1970-01-01T00:01:00Z","1970-01-01T00:02:00Z"],"e":[],"u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}

            """)
    }

    @Test("baton.message needs a table")
    func needsTable() async throws {
        let r = try await runScript(#"print(pcall(function() return baton.message("str") end))"#)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout.hasPrefix("false\tx.lua:1: bad argument #1 to 'baton.message' (table expected, got string)"), "\(r)")
    }

    @Test("dates: from nothing, epoch seconds or ISO 8601; compare, add, subtract")
    func dates() async throws {
        try await expectOutput("""
            print(baton.date(0))
            local d1 = baton.date("2026-11-21T10:00:00Z")
            local d2 = d1 + 60
            print(d1, d2, d2 - d1, 60 + d1, d1 - 30)
            print(d1 < d2, d2 < d1, d1 <= d1, d1 == baton.date("2026-11-21T10:00:00Z"), d1 == d2)
            print(d1:epoch(), d2:iso(), tostring(d1))
            print(baton.date("2026-11-21T11:00:00+01:00") == d1)
            print(baton.date(1.5))
            print(baton.date(d1) == d1)
            local now = baton.date()
            print(math.abs(now:epoch() - os.time()) < 5)
            """, """
            1970-01-01T00:00:00Z
            2026-11-21T10:00:00Z\t2026-11-21T10:01:00Z\t60.0\t2026-11-21T10:01:00Z\t2026-11-21T09:59:30Z
            true\tfalse\ttrue\ttrue\tfalse
            1795255200.0\t2026-11-21T10:01:00Z\t2026-11-21T10:00:00Z
            true
            1970-01-01T00:00:01.500Z
            true
            true

            """)
    }

    @Test("a string that is not a date is an error naming it", arguments: [
        "yesterday", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-21 10:00", "",
    ])
    func badDate(_ text: String) async throws {
        let r = try await runScript("""
            local ok, err = pcall(function() return baton.date("\(text)") end)
            print(ok) print(err)
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdoutLines.first == "false", "\(r)")
        #expect(r.stdout.contains("x.lua:1: "), "\(r)")
        #expect(r.stdout.contains("not an ISO 8601 date"), "\(r)")
    }

    @Test("uuids: random ones are 36 lowercase characters, version 4, all different")
    func randomUUID() async throws {
        let r = try await runScript("""
            local seen = {}
            for i = 1, 100 do
              local s = tostring(baton.uuid())
              assert(#s == 36, s)
              assert(s == s:lower(), s)
              assert(s:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"), s)
              assert(not seen[s], "repeated " .. s)
              seen[s] = true
            end
            print("ok")
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "ok\n", "\(r)")
    }

    @Test("uuids: parsed from text in any case, printed lowercase, compared by value")
    func parsedUUID() async throws {
        try await expectOutput("""
            local a = baton.uuid("6BA7B810-9DAD-11D1-80B4-00C04FD430C8")
            local b = baton.uuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
            print(a, a == b, rawequal(a, b), a == baton.uuid(), baton.uuid(a) == a)
            """, "6ba7b810-9dad-11d1-80b4-00c04fd430c8\ttrue\tfalse\tfalse\ttrue\n")
    }

    @Test("a string that is not a uuid is an error", arguments: ["nope", "6ba7b810-9dad-11d1-80b4-00c04fd430c", "6ba7b8109dad11d180b400c04fd430c8x"])
    func badUUID(_ text: String) async throws {
        let r = try await runScript(#"print(pcall(function() return baton.uuid("\#(text)") end))"#)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout.hasPrefix("false\tx.lua:1: "), "\(r)")
        #expect(r.stdout.contains("not a UUID"), "\(r)")
    }

    @Test("bytes: length and tostring give the raw bytes, zeros included")
    func bytes() async throws {
        try await expectOutput(#"""
            local b = baton.bytes("a\0b\255")
            print(#b, tostring(b) == "a\0b\255", b == baton.bytes("a\0b\255"), b == baton.bytes("x"))
            print(#baton.bytes(""), baton.bytes(b) == b)
            """#, "4\ttrue\ttrue\tfalse\n0\ttrue\n")
    }

    @Test("baton.array marks a table as an array, so an empty one is []")
    func array() async throws {
        try await expectOutput("""
            local J = baton.json
            print(J.encode(baton.array {}), J.encode({}), J.encode(baton.array { 1, 2 }))
            local t = { "x" }
            print(rawequal(baton.array(t), t), J.encode({ e = baton.array() }))
            print(pcall(function() return J.encode(baton.array { a = 1 }) end))
            """, """
            []\t{}\t[1,2]
            true\t{"e":[]}
            false\tx.lua:5: baton.json.encode: value: mixed keys [1] and "a": a table is an array (keys 1..n) or a dictionary (string keys), not both

            """)
    }
}
