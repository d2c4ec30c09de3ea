import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton batch` stopping before its end: --halt, --timeout, SIGINT and SIGTERM; what the
/// report and the journal then say; and what else the report and stderr carry.
@Suite("Batches that stop early")
struct BatchStopTests {
    /// Items n%5 == 0 fail (unavailable); items named slow sleep 30 s; the rest 10 ms. Each
    /// item's start is in the journal, so a test can wait for it.
    static let job = """
        function job(item, ctx)
          if item.slow then baton.sleep(30) end
          baton.sleep(0.01)
          if item.n % 5 == 0 then baton.error("unavailable", "down " .. ctx.key) end
        end
        """

    static func items(_ count: Int, slow: Set<Int> = []) -> String {
        (1...count).map { n in #"{"key": "k\#(n)", "n": \#(n)\#(slow.contains(n) ? #", "slow": true"# : "")}"# }
            .joined(separator: "\n") + "\n"
    }

    static func report(_ dir: ScriptDirectory, _ name: String = "r.json") throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent(name))) as? [String: Any])
    }

    static func counts(_ report: [String: Any]) -> [String: Int] { report["counts"] as? [String: Int] ?? [:] }

    @Test("--halt soon,fail=2 with one job: nothing starts after the second failure; the rest are not_run; exit 4, status halted")
    func haltSoon() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job)
        try dir.write("items.jsonl", Self.items(40))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "1", "--halt", "soon,fail=2", "--report", "r.json")
        #expect(result.exitCode == 4, "\(result)")
        let report = try Self.report(dir)
        #expect(report["status"] as? String == "halted")
        let c = Self.counts(report)
        #expect(c["succeeded"] == 8 && c["failed"] == 2 && c["not_run"] == 30 && c["in_doubt"] == 0, "\(c)")
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items.count == 40)
        #expect(items[10]["status"] as? String == "not_run" && items[10]["key"] as? String == "k11")
        #expect(result.stderr.contains("halted, 40 items: 8 succeeded"), "\(result)")
    }

    @Test("--halt now,fail=2: the running items are cancelled, counted in doubt, journaled as cancelled; --resume runs them again")
    func haltNow() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", """
            function job(item, ctx)
              if item.n <= 2 then baton.sleep(0.05) baton.error("unavailable", "down") end
              if item.n <= 4 then baton.sleep(30) end
            end
            """)
        try dir.write("items.jsonl", Self.items(20))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--halt", "now,fail=2",
                                         "--journal", "j", "--report", "r.json")
        #expect(result.exitCode == 4, "\(result)")
        let report = try Self.report(dir)
        #expect(report["status"] as? String == "halted")
        let c = Self.counts(report)
        // k1's worker may start k5 before k2 fails: k5 then ended or was cancelled too.
        let succeeded = c["succeeded"] ?? -1
        #expect(c["failed"] == 2 && (c["in_doubt"] ?? 0) >= 2 && succeeded + (c["in_doubt"] ?? 0) + (c["not_run"] ?? 0) == 18, "\(c)")
        let items = try #require(report["items"] as? [[String: Any]])
        #expect(items[2]["status"] as? String == "cancelled" && items[3]["status"] as? String == "cancelled")
        #expect(items.filter { $0["status"] as? String == "cancelled" }.count == c["in_doubt"])
        let retry = try #require(report["retry_command"] as? String)
        #expect(retry.hasSuffix("--journal j --report r.json --retry-failed"), "\(retry)")
        #expect(result.stderr.contains("to run what is left: "), "\(result)")
        let journal = try String(contentsOf: dir.url.appendingPathComponent("j/journal.jsonl"), encoding: .utf8)
        #expect(journal.components(separatedBy: #""status":"cancelled""#).count - 1 == c["in_doubt"], "\(journal)")

        // Resumed: the failures stay failed (--resume skips them), the cancelled ones run again.
        try dir.write("job.lua", Self.job)
        let resumed = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--journal", "j", "--resume",
                                          "--force", "--report", "r2.json")
        let second = Self.counts(try Self.report(dir, "r2.json"))
        #expect(second["skipped"] == 2 + succeeded && (second["succeeded"] ?? 0) + (second["failed"] ?? 0) == 18 - succeeded, "\(second) \(resumed)")
        #expect(second["not_run"] == 0 && second["in_doubt"] == 0, "\(second)")
    }

    @Test("--timeout: the batch stops at its deadline; running items are cancelled (in doubt), the rest not run; exit 3, status timed_out")
    func timeout() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job)
        try dir.write("items.jsonl", Self.items(10, slow: Set(1...10)))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "3", "--timeout", "300ms", "--report", "r.json")
        #expect(result.exitCode == 3, "\(result)")
        let report = try Self.report(dir)
        #expect(report["status"] as? String == "timed_out")
        #expect(Self.counts(report)["in_doubt"] == 3 && Self.counts(report)["not_run"] == 7, "\(report)")
    }

    /// A job that signals its own process when item `key` starts, with `signals` (kill's
    /// arguments, one kill each): the moment is the batch's own, whatever the test runner's
    /// load. Items take their journal start, one after the other, before any of them runs, so
    /// every worker has its item by then. The kills run in the background, a moment later:
    /// system(3) ignores SIGINT in its caller while its shell runs.
    static func signalling(at key: String, _ signals: [String], then body: String) -> String {
        let commands = signals.map { "kill -\($0) \" .. pid .. \"" }.joined(separator: "; ")
        let kills = #"os.execute("(sleep 0.2; "# + commands + #") &")"#
        return """
            local pid = io.open("/proc/self/stat"):read("n")
            function job(item, ctx)
              if ctx.key == "\(key)" then \(kills) end
              \(body)
            end
            """
    }

    @Test("SIGINT: nothing new starts, the running items finish within the grace; journal and report are written; exit 130")
    func interruptedOnce() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.signalling(at: "k4", ["INT"], then: "baton.sleep(1.5)"))
        try dir.write("items.jsonl", Self.items(40))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--journal", "j", "--report", "r.json")
        #expect(result.exitCode == 130, "\(result)")
        let report = try Self.report(dir)
        #expect(report["status"] as? String == "cancelled")
        #expect(report["exit_code"] as? Int == 130)
        let c = Self.counts(report)
        #expect(c["succeeded"] == 4 && c["not_run"] == 36 && c["in_doubt"] == 0 && c["failed"] == 0, "\(c)")
        let journal = try String(contentsOf: dir.url.appendingPathComponent("j/journal.jsonl"), encoding: .utf8)
        #expect(journal.components(separatedBy: #""kind":"start""#).count - 1 == 4)
        #expect(journal.components(separatedBy: #""kind":"end""#).count - 1 == 4)
        #expect(result.stderr.contains("interrupted: no new items start"), "\(result)")
        #expect(result.stderr.contains("to run what is left: "), "\(result)")
    }

    @Test("SIGTERM twice: the running items are cancelled at once (in doubt); exit 143; a resume runs them and the rest")
    func terminatedTwice() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.signalling(at: "k3", ["TERM", "TERM"], then: "if item.slow then baton.sleep(30) end"))
        try dir.write("items.jsonl", Self.items(12, slow: [1, 2, 3]))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "3", "--journal", "j", "--report", "r.json")
        #expect(result.exitCode == 143, "\(result)")
        let c = Self.counts(try Self.report(dir))
        #expect(c["in_doubt"] == 3 && c["not_run"] == 9, "\(c)")

        try dir.write("fast.lua", "function job(item) end")
        let resumed = try await dir.baton("batch", "fast.lua", "--input", "items.jsonl", "--journal", "j", "--resume", "--force", "--report", "r2.json")
        #expect(resumed.exitCode == 0, "\(resumed)")
        #expect(Self.counts(try Self.report(dir, "r2.json"))["succeeded"] == 12)
    }

    @Test("SIGINT and a grace that runs out: the running items are cancelled then; exit 130")
    func graceRunsOut() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.signalling(at: "k2", ["INT"], then: "if item.slow then baton.sleep(30) end"))
        try dir.write("items.jsonl", Self.items(4, slow: [1, 2]))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "2", "--grace", "200ms", "--journal", "j", "--report", "r.json")
        #expect(result.exitCode == 130, "\(result)")
        let c = Self.counts(try Self.report(dir))
        #expect(c["in_doubt"] == 2 && c["not_run"] == 2, "\(c)")
    }

    @Test("the report names the script and input with their SHA-256, the command line, host, version, run id and policy")
    func reportFields() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", "function job(item) end")
        try dir.write("items.jsonl", Self.items(3))
        let result = try await dir.baton("batch", "job.lua", "--input", "items.jsonl", "--jobs", "2", "--report", "r.json")
        #expect(result.exitCode == 0, "\(result)")
        let report = try Self.report(dir)
        let sha = try await BatonProcess.run(["job.lua"], program: URL(fileURLWithPath: "/usr/bin/sha256sum"), directory: dir.url)
        #expect(report["script_sha256"] as? String == String(sha.stdout.prefix(64)))
        #expect((report["input_sha256"] as? String)?.count == 64)
        #expect((report["command_line"] as? [String])?.suffix(8) == ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "2", "--report", "r.json"])
        #expect((report["host"] as? String)?.isEmpty == false)
        #expect(report["version"] as? String != nil && report["run_id"] as? String != nil)
        #expect((report["policy"] as? [String: Any])?["jobs"] as? Int == 2)
        #expect(report["retry_command"] == nil)
    }

    @Test("progress: a bar redrawn in place on a terminal (colour only without NO_COLOR), nothing with -q")
    func progressOnATerminal() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", "function job(item) baton.sleep(0.05) if item.n == 3 then error('x') end end")
        try dir.write("items.jsonl", Self.items(30))
        // script(1) gives the batch a terminal for its stderr.
        func onTerminal(_ flags: String, environment: [String: String] = [:]) async throws -> String {
            // An empty NO_COLOR counts as unset (no-color.org); the runner's own may be set.
            var env = ["NO_COLOR": ""]
            env.merge(environment) { _, given in given }
            let command = "\(try BatonProcess.executable.get().path) batch job.lua --input items.jsonl --jobs 2 \(flags)"
            let r = try await BatonProcess.run(["-q", "-e", "-c", command, "/dev/null"], program: URL(fileURLWithPath: "/usr/bin/script"),
                                               environment: env, directory: dir.url)
            #expect(r.exitCode == 4, "\(r)")
            return r.stdout
        }
        let bar = try await onTerminal("")
        #expect(bar.contains("\r[#"), "\(bar.debugDescription)")
        #expect(bar.contains("/30  "), "\(bar.debugDescription)")
        #expect(bar.contains("\u{1B}[31m1 failed"), "\(bar.debugDescription)")
        let plain = try await onTerminal("", environment: ["NO_COLOR": "1"])
        #expect(plain.contains("\r[#") && !plain.contains("\u{1B}[31m"), "\(plain.debugDescription)")
        let quiet = try await onTerminal("-q")
        #expect(!quiet.contains("\r["), "\(quiet.debugDescription)")
    }

    @Test("stop mistakes exit 2", arguments: [["--halt", "later"], ["--halt", "soon,fail=x"], ["--timeout", "soon"], ["--grace", "x"]])
    func mistakes(arguments: [String]) async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", "function job() end")
        try dir.write("i.jsonl", "{}\n")
        let result = try await BatonProcess.run(["batch", "job.lua", "--input", "i.jsonl"] + arguments, directory: dir.url)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.contains("Invalid"), "\(result)")
    }
}
