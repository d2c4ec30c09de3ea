import BatonCore
import BatonLua
import Testing

@Suite("Limits: --timeout and --max-memory")
struct LimitsTests {
    @Test("a busy loop is stopped at the timeout", arguments: [
        "while true do end",
        "while true do pcall(function() while true do end end) end",
        "while true do local ok = xpcall(function() while true do end end, function(e) return e end) end",
        "baton.spawn(function() while true do end end) baton.sleep(10)",
        "baton.sleep(10)",
        "local t = setmetatable({}, {__index = function() while true do end end}) while true do pcall(function() return t.x end) end",
    ])
    func timeout(script: String) async throws {
        let (outcome, record) = try await runScript(script, timeout: .milliseconds(200))
        #expect(outcome == .timedOut(.milliseconds(200)))
        #expect(outcome.exitCode == 3)
        #expect(record.failures.isEmpty, "a timeout is not reported as a script error: \(record.failures)")
    }

    @Test("allocations past the cap fail as 'not enough memory'; the script catches it and goes on")
    func memoryCap() async throws {
        let (outcome, record) = try await runScript("""
            local ok, err = pcall(function()
              local t = {}
              for i = 1, 1e8 do t[i] = ("x"):rep(100) .. i end
            end)
            capture({tostring(ok), err})
            collectgarbage()
            local s = ("y"):rep(1e6)
            capture(#s)
            ok, err = pcall(string.rep, "z", 1e9)
            capture(err)
            ok, err = pcall(baton.json.decode, "[" .. ("1,"):rep(3e6) .. "1]")
            capture(err)
            """, maxMemory: 16 << 20)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [
            .array([.string("false"), .string("not enough memory")]), .int(1_000_000),
            .string("not enough memory"), .string("not enough memory"),
        ])
    }

    @Test("an uncaught memory error fails the run with exit code 1")
    func memoryUncaught() async throws {
        let (outcome, record) = try await runScript("local s = string.rep('x', 1e9)", maxMemory: 8 << 20)
        #expect(outcome == .failed)
        #expect(record.failures.map(\.message) == ["not enough memory"])
    }
}
