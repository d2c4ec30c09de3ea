import Foundation
import Testing

/// `baton.json.encode` and `baton.json.decode` as a script sees them.
@Suite("baton.json in scripts")
struct JSONScriptTests {
    private func expectOutput(
        _ script: String, _ stdout: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let r = try await runScript(script, sourceLocation: sourceLocation)
        #expect(r.exitCode == 0, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stdout == stdout, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr == "", "\(r)", sourceLocation: sourceLocation)
    }

    @Test("encode is compact with sorted keys by default")
    func compact() async throws {
        try await expectOutput("""
            print(baton.json.encode({ b = {1, 2}, a = 1 }))
            print(baton.json.encode({ z = { y = 1, x = { "q" } }, ["A"] = true, ["_"] = "u", a = 2.5 }))
            """, """
            {"a":1,"b":[1,2]}
            {"A":true,"_":"u","a":2.5,"z":{"x":["q"],"y":1}}

            """)
    }

    @Test("pretty output indents by two spaces, keys sorted")
    func pretty() async throws {
        try await expectOutput("""
            print(baton.json.encode({ b = {1, 2}, a = 1, c = { d = "x" }, e = baton.array {}, f = {} }, { pretty = true }))
            print(baton.json.encode({ 1 }, { pretty = false }))
            """, """
            {
              "a": 1,
              "b": [
                1,
                2
              ],
              "c": {
                "d": "x"
              },
              "e": [],
              "f": {}
            }
            [1]

            """)
    }

    @Test("the output is JSON that another parser reads back")
    func validJSON() async throws {
        let r = try await runScript(#"""
            print(baton.json.encode({
              s = "quote \" backslash \\ newline \n tab \t nul \0 é 😀",
              n = { 0, -1, 2^53, 1.5, -0.25, 1e300, math.maxinteger, math.mininteger },
              t = true, f = false, null = baton.json.null,
            }))
            """#)
        #expect(r.exitCode == 0, "\(r)")
        let data = Data(r.stdout.utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(r)")
        #expect(object["s"] as? String == "quote \" backslash \\ newline \n tab \t nul \0 é 😀")
        #expect(object["t"] as? Bool == true)
        #expect(object["f"] as? Bool == false)
        #expect(object["null"] is NSNull)
        let numbers = try #require(object["n"] as? [NSNumber])
        #expect(numbers.count == 8)
        #expect(numbers.first?.intValue == 0)
        #expect(numbers.dropFirst(1).first?.intValue == -1)
        #expect(numbers.dropFirst(3).first?.doubleValue == 1.5)
        #expect(numbers.dropFirst(6).first?.int64Value == Int64.max)
        #expect(numbers.dropFirst(7).first?.int64Value == Int64.min)
    }

    @Test("scalars encode on their own; integers and floats stay apart")
    func scalars() async throws {
        try await expectOutput("""
            local e = baton.json.encode
            print(e(3), e(2.5), e(2.0), e(true), e("s"), e(nil), e(baton.json.null))
            """, "3\t2.5\t2.0\ttrue\t\"s\"\tnull\tnull\n")
    }

    @Test("dates encode as ISO strings, uuids as strings, bytes as base64")
    func specialValues() async throws {
        try await expectOutput("""
            print(baton.json.encode({
              d = baton.date("2026-11-21T10:00:00Z"), ms = baton.date(0.25),
              u = baton.uuid("6BA7B810-9DAD-11D1-80B4-00C04FD430C8"),
              b = baton.bytes("\\0\\1\\2hello"), e = baton.bytes(""),
            }))
            """, """
            {"b":"AAECaGVsbG8=","d":"2026-11-21T10:00:00Z","e":"","ms":"1970-01-01T00:00:00.250Z","u":"6ba7b810-9dad-11d1-80b4-00c04fd430c8"}

            """)
    }

    @Test("what JSON cannot hold is an error naming the place", arguments: [
        ("0/0", "NaN cannot be written as JSON"),
        ("{ x = { 0/0 } }", "x[1]: NaN cannot be written as JSON"),
        ("{ f = print }", ".f: cannot encode a function"),
        ("print", "cannot encode a function"),
        ("math.huge", "infinity cannot be written as JSON"),
        ("(function() local t = {} t.t = t return t end)()", ".t: cycle: the table contains itself"),
        ("{ 1, nil, 3 }", "array has holes"),
        ("{ [1.5] = true }", "is not a string: dictionary keys must be strings"),
    ])
    func encodeErrors(_ value: String, _ message: String) async throws {
        let r = try await runScript("""
            local ok, err = pcall(function() return baton.json.encode(\(value)) end)
            print(ok) print(err)
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdoutLines.first == "false", "\(r)")
        let err = r.stdoutLines.dropFirst().first ?? ""
        #expect(err.hasPrefix("x.lua:1: baton.json.encode: "), "\(r)")
        #expect(err.contains(message), "\(r)")
    }

    @Test("decode: null is baton.json.null; numbers keep their kind; strings are UTF-8")
    func decode() async throws {
        try await expectOutput(#"""
            local J = baton.json
            local v = J.decode('{"a": null, "b": [], "c": [1, 2.5, "x"], "d": {}, "e": 1, "f": 1.0, "g": true, "h": "\\u00e9\\ud83d\\ude00"}')
            print(v.a == J.null, rawequal(v.a, J.null), type(v.b), #v.b, v.c[3], next(v.d))
            print(math.type(v.e), math.type(v.f), math.type(v.c[1]), math.type(v.c[2]), v.g, v.h)
            print(math.type(J.decode("9223372036854775807")), J.decode("9223372036854775807"), J.decode('"s"'))
            print(J.decode("null") == J.null, J.decode("false"))
            """#, """
            true\ttrue\ttable\t0\tx\tnil
            integer\tfloat\tinteger\tfloat\ttrue\té😀
            integer\t9223372036854775807\ts
            true\tfalse

            """)
    }

    @Test("baton.json.null prints as null")
    func nullPrints() async throws {
        try await expectOutput("""
            print(baton.json.null, tostring(baton.json.decode("null")))
            """, "null\tnull\n")
    }

    @Test("decoded arrays re-encode as arrays, empty ones included; objects as objects")
    func roundTrip() async throws {
        try await expectOutput("""
            local J = baton.json
            print(J.encode(J.decode('{"a":null,"b":[],"c":[1,2.5,"x"],"d":{},"e":[[]],"f":1.0}')))
            print(J.encode(J.decode("[]")), J.encode(J.decode("{}")), J.encode(J.decode("[{}]")))
            local t = J.decode("[]")
            t[1] = "added"
            print(J.encode(t))
            """, """
            {"a":null,"b":[],"c":[1,2.5,"x"],"d":{},"e":[[]],"f":1.0}
            []\t{}\t[{}]
            ["added"]

            """)
    }

    @Test("bad JSON is an error with line and column", arguments: [
        (#"{"a": tru}"#, "baton.json.decode: line 1, column 7: "),
        ("[1, 2", "baton.json.decode: line 1, column 6: "),
        (#"{"a":1,}"#, "baton.json.decode: line 1, column 8: "),
        (#"{"a":1} x"#, "baton.json.decode: line 1, column 9: "),
        ("", "baton.json.decode: line 1, column 1: "),
        (#"[1,\n 2,\n x]"#, "baton.json.decode: line 3, column 2: "),
    ])
    func decodeErrors(_ text: String, _ prefix: String) async throws {
        let r = try await runScript("""
            local ok, err = pcall(function() return baton.json.decode("\(text.replacingOccurrences(of: "\"", with: "\\\""))") end)
            print(ok) print(err)
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdoutLines.first == "false", "\(r)")
        let err = r.stdoutLines.dropFirst().first ?? ""
        #expect(err.hasPrefix("x.lua:1: " + prefix), "\(r)")
        #expect(err.count > ("x.lua:1: " + prefix).count, "the error says what is wrong\n\(r)")
    }

    @Test("an uncaught decode error ends the run with exit 1")
    func uncaughtDecodeError() async throws {
        let r = try await runScript("""
            print("before")
            local v = baton.json.decode("{oops}")
            """)
        #expect(r.exitCode == 1, "\(r)")
        #expect(r.stdout == "before\n")
        #expect(r.stderrLines.first?.hasPrefix("x.lua:2: baton.json.decode: line 1, column 2: ") == true, "\(r)")
    }

    @Test("decode takes only strings")
    func decodeNeedsString() async throws {
        let r = try await runScript("print(pcall(function() return baton.json.decode(42) end))")
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout.hasPrefix("false\tx.lua:1: bad argument #1 to 'baton.json.decode' (string expected, got number)"), "\(r)")
    }
}
