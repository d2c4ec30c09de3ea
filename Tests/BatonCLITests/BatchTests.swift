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
        #expect(counts == ["total": 100, "succeeded": 92, "changed": 47, "failed": 8, "retried": 11, "skipped": 0, "in_doubt": 0, "not_run": 0])
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

    @Test("an item waiting out its retry's backoff holds no --jobs slot: the others run meanwhile; it says why it was retried")
    func backoffHoldsNoSlot() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", """
            function job(item, ctx)
              local f = io.open("order.txt", "a") f:write(ctx.key, "\\n") f:close()
              if ctx.key == "a" and ctx.attempt == 1 then baton.error("unavailable", "the TV is off") end
            end
            """)
        try dir.write("items.json", #"[{"key": "a"}, {"key": "b"}, {"key": "c"}, {"key": "d"}, {"key": "e"}]"#)
        let result = try await dir.baton("batch", "job.lua", "--input", "items.json", "--jobs", "1", "--retries", "1",
                                         "--backoff", "2s..2s", "--report", "r.json")
        #expect(result.exitCode == 0, "\(result)")
        let order = try String(contentsOf: dir.url.appendingPathComponent("order.txt"), encoding: .utf8)
        #expect(order == "a\nb\nc\nd\ne\na\n", "\(order)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent("r.json"))) as? [String: Any])
        let first = try #require((report["items"] as? [[String: Any]])?.first)
        #expect(first["status"] as? String == "ok" && first["attempts"] as? Int == 2)
        #expect((first["retried_after"] as? [[String: Any]])?.first?["class"] as? String == "unavailable", "\(first)")
    }

    @Test("two items with one key are refused before anything runs (the journal and a resume go by keys): exit 2")
    func duplicateKeys() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", #"function job(item) io.open("ran", "w"):close() end"#)
        try dir.write("items.json", #"[{"key": "a"}, {"key": "b"}, {"key": "a"}]"#)
        let result = try await dir.baton("batch", "job.lua", "--input", "items.json")
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.contains(#"items 1 and 3 have the same key "a""#), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("ran").path))
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

    @Test("the runner killed with -9 mid-batch: --resume redoes no item that ended, runs the ones in doubt again, and refuses a changed script")
    func killedAndResumed() async throws {
        let dir = try ScriptDirectory()
        // Item 20 kills its own runner with -9, once: the batch stops mid-way, items in flight.
        try dir.write("job.lua", """
            function job(item, ctx)
              local f = io.open("ran.txt", "a") f:write(ctx.key, "\\n") f:close()
              if ctx.key == "i20" and not io.open("killed") then
                io.open("killed", "w"):close()
                local pid = io.open("/proc/self/stat"):read("n")
                os.execute("kill -9 " .. pid)
                baton.sleep(10)
              end
              baton.sleep(0.02)
            end
            """)
        try dir.write("items.jsonl", (1...40).map { #"{"key": "i\#($0)"}"# }.joined(separator: "\n") + "\n")
        let first = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--journal", "j")
        #expect(first.exitCode == 137, "\(first)")
        let journal = try String(contentsOf: dir.url.appendingPathComponent("j/journal.jsonl"), encoding: .utf8)
        let records = journal.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(records.first?["kind"] as? String == "batch")
        let ended = Set(records.filter { $0["kind"] as? String == "end" }.compactMap { $0["key"] as? String })
        let started = Set(records.filter { $0["kind"] as? String == "start" }.compactMap { $0["key"] as? String })
        let inDoubt = started.subtracting(ended)
        #expect(inDoubt.contains("i20"))
        #expect(!ended.isEmpty)

        let resumed = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--journal", "j", "--resume", "--report", "r.json")
        #expect(resumed.exitCode == 0, "\(resumed)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent("r.json"))) as? [String: Any])
        let counts = try #require(report["counts"] as? [String: Int])
        #expect(counts["skipped"] == ended.count)
        #expect(counts["succeeded"] == 40 - ended.count)
        #expect(counts["in_doubt"] == 0)
        let ran = try String(contentsOf: dir.url.appendingPathComponent("ran.txt"), encoding: .utf8).split(separator: "\n").map(String.init)
        for key in (1...40).map({ "i\($0)" }) {
            // An item in doubt may have been killed before or after it did its work: it ran
            // once or twice. Every other item ran exactly once.
            let times = ran.filter { $0 == key }.count
            #expect(inDoubt.contains(key) ? (1...2).contains(times) : times == 1, "\(key) ran \(times) times")
        }

        let again = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--journal", "j", "--resume")
        #expect(again.exitCode == 0, "\(again)")
        #expect(again.stderr.contains("0 succeeded (0 changed), 0 failed, 0 retries, 40 skipped"), "\(again)")

        try dir.write("job.lua", "-- changed\n" + (try String(contentsOf: dir.url.appendingPathComponent("job.lua"), encoding: .utf8)))
        let changed = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--journal", "j", "--resume")
        #expect(changed.exitCode == 2, "\(changed)")
        #expect(changed.stderr.hasPrefix("the script changed since batch "), "\(changed)")
        let forced = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--journal", "j", "--resume", "--force")
        #expect(forced.exitCode == 0, "\(forced)")
        let fresh = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--journal", "j")
        #expect(fresh.exitCode == 2, "\(fresh)")
        #expect(fresh.stderr.contains("already holds a batch"), "\(fresh)")
    }

    @Test("--in-doubt check: verify(item, ctx) settles the items in doubt, so every item's work is done exactly once")
    func inDoubtChecked() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", """
            local function ran() local f = io.open("ran.txt") local t = f and f:read("a") or "" if f then f:close() end return t end
            function verify(item, ctx) return ran():find(ctx.key .. "\\n", 1, true) ~= nil end
            function job(item, ctx)
              if ctx.key == "i7" and not io.open("killed") then
                io.open("killed", "w"):close()
                os.execute("kill -9 " .. io.open("/proc/self/stat"):read("n"))
                baton.sleep(10)
              end
              local f = io.open("ran.txt", "a") f:write(ctx.key, "\\n") f:close()
              baton.sleep(0.02)
            end
            """)
        try dir.write("items.jsonl", (1...20).map { #"{"key": "i\#($0)"}"# }.joined(separator: "\n") + "\n")
        let first = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "3", "--journal", "j")
        #expect(first.exitCode == 137, "\(first)")
        let resumed = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "3", "--journal", "j", "--resume", "--in-doubt", "check")
        #expect(resumed.exitCode == 0, "\(resumed)")
        let ran = try String(contentsOf: dir.url.appendingPathComponent("ran.txt"), encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(ran.sorted() == (1...20).map { "i\($0)" }.sorted(), "\(ran)")
        try dir.write("plain.lua", "function job() end")
        let noVerify = try await BatonProcess.run(
            ["batch", "plain.lua", "--input", "items.jsonl", "--in-doubt", "check"], directory: dir.url)
        #expect(noVerify.exitCode == 2, "\(noVerify)")
        #expect(noVerify.stderr.hasPrefix("--in-doubt check needs plain.lua to define verify(item, ctx)"), "\(noVerify)")
    }
}
