import Foundation
import Testing

/// `baton batch` and `baton.batch`: every item run, retried as the policy says, counted
/// exactly in the report.
@Suite("Batches")
struct BatchTests {
    static let job = """
        function job(item, ctx)
          local n = tonumber(item.n)
          if n % 10 == 0 and ctx.attempt == 1 then baton.error("unavailable", "flaky " .. ctx.key) end
          if n % 25 == 0 then error("broken " .. ctx.key) end
          if n % 33 == 0 then baton.error("not_found", "no device for " .. ctx.key) end
          if n == 49 then baton.sleep(30) end
          if n % 2 == 0 then ctx:changed() end
          assert(ctx.idempotency_key == ctx.batch .. "/" .. ctx.key)
        end
        """

    /// 100 items: the 10 multiples of 10 fail once as unavailable (retried); 25, 50, 75, 100
    /// raise (script, not retried; 50 and 100 on their second attempt); 33, 66, 99 are
    /// not_found (never retried); 49 outlives the item timeout (timeout: retried, and times
    /// out again).
    @Test("100 items with failures of each kind: the report's counts and each item's attempts are exact; past --tolerate, exit 4")
    func counts() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job)
        try dir.write("items.jsonl", (1...100).map { #"{"key": "item-\#($0)", "n": \#($0)}"# }.joined(separator: "\n") + "\n")
        let result = try await dir.baton(
            "batch", "job.lua", "--input", "items.jsonl", "--jobs", "16", "--retries", "1", "--backoff", "10ms..20ms",
            "--item-timeout", "300ms", "--report", "report.json")
        #expect(result.exitCode == 4, "\(result)")
        #expect(result.stderr.contains("failed, 100 items: 92 succeeded (47 changed), 8 failed, 11 retries"), "\(result)")
        let data = try Data(contentsOf: dir.url.appendingPathComponent("report.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(report["status"] as? String == "failed")
        #expect(report["exit_code"] as? Int == 4)
        let counts = try #require(report["counts"] as? [String: Int])
        #expect(counts == ["total": 100, "succeeded": 92, "changed": 47, "failed": 8, "retried": 11])
        #expect(report["failures_by_class"] as? [String: Int] == ["script": 4, "not_found": 3, "timeout": 1])
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.count == 100)
        func item(_ n: Int) -> [String: Any] { items[n - 1] }
        #expect(item(10)["status"] as? String == "changed" && item(10)["attempts"] as? Int == 2)
        #expect(item(11)["status"] as? String == "ok" && item(11)["attempts"] as? Int == 1)
        #expect(item(25)["attempts"] as? Int == 1)
        #expect((item(25)["error"] as? [String: Any])?["class"] as? String == "script")
        #expect(((item(25)["error"] as? [String: Any])?["traceback"] as? String)?.contains("job.lua:4") == true)
        #expect(item(33)["attempts"] as? Int == 1)
        #expect((item(33)["error"] as? [String: Any])?["retryable"] as? Bool == false)
        #expect(item(50)["attempts"] as? Int == 2)
        #expect((item(50)["error"] as? [String: Any])?["class"] as? String == "script")
        #expect(item(49)["attempts"] as? Int == 2)
        #expect((item(49)["error"] as? [String: Any])?["class"] as? String == "timeout")
    }

    @Test("CSV input with a header and quoted fields, keyed by a field; failures within --tolerate exit 0")
    func csvAndTolerate() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", #"function job(item) if item.fail == "yes" then baton.error("unavailable", "down") end end"#)
        try dir.write("tvs.csv", "name,fail\nkitchen,no\n\"hall, upstairs\",yes\nden,no\n")
        let result = try await dir.baton("batch", "job.lua", "--input", "tvs.csv", "--key", "name", "--tolerate", "34%", "--report", "r.json")
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.contains("succeeded_with_failures, 3 items: 2 succeeded"), "\(result)")
        #expect(result.stderr.contains("  hall, upstairs: unavailable: job.lua:1: down"), "\(result)")
        let strict = try await dir.baton("batch", "job.lua", "--input", "tvs.csv", "--key", "name")
        #expect(strict.exitCode == 4, "\(strict)")
    }

    @Test("baton.batch from a script returns the report table")
    func fromLua() async throws {
        let r = try await runScript("""
            local seen = {}
            local report = baton.batch({ {id = "a"}, {id = "b"}, {id = "c"} }, function(item, ctx)
              seen[#seen + 1] = ctx.key
              if ctx.key == "b" then ctx:changed() end
            end, { jobs = 1 })
            print(table.concat(seen, ","), report.status, report.exit_code, report.counts.changed, report.items[2].status)
            print(pcall(baton.batch, {}, "not a function"))
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout.hasPrefix("a,b,c\tsucceeded\t0\t1\tchanged\nfalse\t"), "\(r)")
        #expect(r.stdout.contains("baton.batch: fn must be a function(item, ctx), got string"), "\(r)")
    }

    @Test("batch usage mistakes exit 2", arguments: [
        ["--jobs", "0"], ["--retry-on", "whenever"], ["--backoff", "5s..1s"], ["--tolerate", "some"], ["--item-timeout", "soon"],
    ])
    func mistakes(arguments: [String]) async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", "function job() end")
        try dir.write("i.jsonl", "{}\n")
        let result = try await BatonProcess.run(["batch", "job.lua", "--input", "i.jsonl"] + arguments, directory: dir.url)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.contains("Invalid"), "\(result)")
    }
}
