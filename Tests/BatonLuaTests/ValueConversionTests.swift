import BatonCore
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Lua ⇄ Value conversion, as DESIGN.md's table says")
struct ValueConversionTests {
    @Test("each Lua value becomes the message value the table names")
    func luaToValue() async throws {
        let (outcome, record) = try await runScript("""
            capture("hi"); capture(42); capture(4.5); capture(2^53); capture(true)
            capture(baton.date(0)); capture(baton.uuid("8E1F1A1C-3D7B-4E55-9D6C-0A1B2C3D4E5F"))
            capture(baton.bytes("\\0\\1\\255")); capture({1, 2, 3}); capture({a = 1, b = "x"})
            capture({}); capture(baton.array{}); capture({1, 2.5}); capture({list = {{a = 1}, {a = 2}}})
            capture(-0.0); capture(math.maxinteger)
            """)
        #expect(outcome == .completed)
        #expect(record.errors == [])
        #expect(record.values == [
            .string("hi"), .int(42), .double(4.5), .double(9007199254740992), .bool(true),
            .date(Date(timeIntervalSince1970: 0)), .uuid(UUID(uuidString: "8E1F1A1C-3D7B-4E55-9D6C-0A1B2C3D4E5F")!),
            .bytes([0, 1, 255]), .array([.int(1), .int(2), .int(3)]), .dictionary(["a": .int(1), "b": .string("x")]),
            .dictionary([:]), .array([]), .array([.double(1), .double(2.5)]),
            .dictionary(["list": .array([.dictionary(["a": .int(1)]), .dictionary(["a": .int(2)])])]),
            .double(-0.0), .int(Int64.max),
        ])
    }

    @Test("each message value arrives in Lua as the table says, and round-trips")
    func valueToLua() async throws {
        let values: [Value] = [
            .string("hé"), .int(-7), .double(0.5), .bool(false), .date(Date(timeIntervalSince1970: 1_795_000_000.25)),
            .uuid(UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!), .bytes([0, 200]),
            .array([]), .array([.string("a"), .string("b")]), .dictionary(["k": .array([.int(1)])]),
        ]
        let (outcome, record) = try await runScript("""
            local x = provide(1); assert(type(x) == "string" and x == "hé")
            x = provide(2); assert(math.type(x) == "integer" and x == -7)
            x = provide(3); assert(math.type(x) == "float" and x == 0.5)
            x = provide(4); assert(x == false)
            x = provide(5); assert(tostring(x) == "2026-11-18T11:06:40.250Z", tostring(x))
            x = provide(6); assert(tostring(x) == "00000000-0000-0000-0000-0000000000ff")
            x = provide(7); assert(#x == 2 and tostring(x) == "\\0\\200")
            x = provide(8); assert(next(x) == nil and getmetatable(x) ~= nil)
            assert(baton.json.encode(x) == "[]")
            x = provide(9); assert(#x == 2 and x[2] == "b")
            x = provide(10); assert(x.k[1] == 1)
            for i = 1, 10 do capture(provide(i)) end
            """, provided: values)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == values)
    }

    @Test("every bad input is a Lua error naming its path", arguments: [
        ("{1, \"a\"}", "message[2]: expected number like message[1], got string"),
        ("{items = {\"a\", \"b\", 3}}", "message.items[3]: expected string like items[1], got number"),
        ("{{1}, {a = 1}}", "message[2]: expected array like message[1], got dictionary"),
        ("{f = print}", "message.f: cannot send a function"),
        ("{co = coroutine.create(print)}", "message.co: cannot send a thread"),
        ("{out = io.stdout}", "message.out: cannot send a FILE*"),
        ("{n = baton.json.null}", "message.n: cannot send a baton.json.null"),
        ("(function() local t = {}; t.me = t; return {x = t} end)()", "message.x.me: cycle: the table contains itself"),
        ("{[1] = 1, a = 2}", "message: mixed keys [1] and \"a\": a table is an array (keys 1..n) or a dictionary (string keys), not both"),
        ("{a = {1, nil, 3}}", "message.a: array has holes: 2 elements but keys up to 3; keys must be 1..n"),
        ("{[true] = 1}", "message: key true (boolean) is not a string: dictionary keys must be strings"),
        ("{[1.5] = 1}", "message: key 1.5 (number) is not a string: dictionary keys must be strings"),
        ("{[0] = 1}", "message: key 0 is not a string: dictionary keys must be strings"),
        ("{[\"my key\"] = {true, 1}}", "message[\"my key\"][2]: expected boolean like [\"my key\"][1], got number"),
        ("(function() local t = {} for i = 1, 70 do t = {t} end return t end)()", "nested deeper than 30 levels"),
        ("nil", "message: cannot send nil"),
        ("{name = \"caf\\xe9\"}", "message.name: string is not valid UTF-8 (use baton.bytes for binary data)"),
    ])
    func badInput(expression: String, expected: String) async throws {
        let (outcome, record) = try await runScript("capture(\(expression))")
        #expect(outcome == .completed)
        #expect(record.values == [])
        #expect(record.errors.count == 1)
        #expect(record.errors.first?.hasSuffix(expected) == true, "got \(record.errors)")
    }

    @Test("baton.message returns the checked copy, or raises with the script's position")
    func messageFunction() async throws {
        let (outcome, record) = try await runScript("""
            local m = baton.message{n = 1, list = {1, 2.5}, when = baton.date(60)}
            capture(m)
            assert(math.type(m.n) == "integer" and math.type(m.list[1]) == "float")
            local ok, err = pcall(function() return baton.message{items = {"a", "b", 3}} end)
            capture(err)
            ok, err = pcall(function() return baton.message{1, 2} end)
            capture(err)
            ok, err = pcall(function() return baton.message("x") end)
            capture(err)
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [
            .dictionary(["n": .int(1), "list": .array([.double(1), .double(2.5)]), "when": .date(Date(timeIntervalSince1970: 60))]),
            .string("test:4: message.items[3]: expected string like items[1], got number"),
            .string("test:6: message: a message is a dictionary (string keys), got an array"),
            .string("test:8: bad argument #1 to 'baton.message' (table expected, got string)"),
        ])
    }
}
