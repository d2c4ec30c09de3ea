import Foundation
import Testing

/// `--timeout DURATION` stops the whole run, even code that never yields: exit 3 and
/// `timeout after DURATION` on stderr. No test measures how long anything took.
@Suite("--timeout")
struct TimeoutTests {
    private func expectTimedOut(_ r: BatonResult, after duration: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.exitCode == 3, "\(r)", sourceLocation: sourceLocation)
        #expect(r.stderr.contains("timeout after \(duration)"), "\(r)", sourceLocation: sourceLocation)
    }

    @Test("stops a busy loop; what was printed before is still on stdout")
    func busyLoop() async throws {
        let r = try await runScript("""
            print("before the loop")
            while true do end
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "before the loop\n")
        #expect(r.stderr == "timeout after 500ms\n", "\(r)")
    }

    @Test("stops a loop that keeps catching errors with pcall")
    func pcallLoop() async throws {
        let r = try await runScript("""
            print("before")
            while true do pcall(function() while true do end end) end
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "before\n")
    }

    @Test("stops a loop that catches errors with xpcall and a handler that returns")
    func xpcallLoop() async throws {
        let r = try await runScript("""
            while true do
              xpcall(function() while true do end end, function(e) return e end)
            end
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
    }

    /// The message handler runs while the timeout is being raised; a busy handler must not
    /// escape the limit. Guarded by a shorter wall clock so a hang costs seconds, not 20.
    @Test("stops an xpcall message handler that never returns")
    func busyMessageHandler() async throws {
        let r = try await runScript("""
            print("before")
            xpcall(function() while true do end end, function(e) while true do end end)
            """, flags: ["--timeout", "500ms"], limit: 15)
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "before\n")
    }

    @Test("stops a script blocked in baton.sleep(100)")
    func longSleep() async throws {
        let r = try await runScript("""
            print("going to sleep")
            baton.sleep(100)
            print("woke up")
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "going to sleep\n")
    }

    @Test("stops a busy spawned task after the main chunk has returned")
    func busyTask() async throws {
        let r = try await runScript("""
            baton.spawn(function()
              print("task started")
              while true do end
            end)
            print("main done")
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "main done\ntask started\n")
    }

    @Test("a repeating timer that is never stopped keeps the run alive until the timeout")
    func everyKeepsAlive() async throws {
        let r = try await runScript("""
            local n = 0
            baton.every(0.01, function() n = n + 1 if n == 3 then print("ticked 3 times") end end)
            print("main done")
            """, flags: ["--timeout", "500ms"])
        expectTimedOut(r, after: "500ms")
        #expect(r.stdout == "main done\nticked 3 times\n")
    }

    @Test("the duration in the message is normalised", arguments: [
        ("500ms", "500ms"), ("0.5s", "500ms"), ("0.01m", "600ms"), ("1s", "1s"),
    ])
    func normalised(_ given: String, _ shown: String) async throws {
        let r = try await baton("run", "--timeout", given, "-e", "while true do end")
        expectTimedOut(r, after: shown)
        #expect(r.stderr == "timeout after \(shown)\n", "\(r)")
    }

    @Test("a script that ends before its timeout exits normally", arguments: ["30s", "2m", "10s"])
    func endsInTime(_ timeout: String) async throws {
        let r = try await runScript("""
            baton.sleep(0.01)
            local h = baton.spawn(function() return "done" end)
            print(h:wait())
            """, flags: ["--timeout", timeout])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "done\n")
        #expect(r.stderr == "")
    }

    @Test("with --log-format json the timeout is one JSON object")
    func json() async throws {
        let r = try await runScript("print('x') while true do end", flags: ["--timeout", "500ms", "--log-format", "json"])
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "x\n")
        let objects = jsonLines(r.stderr)
        #expect(objects.count == 1, "\(r)")
        #expect(objects.first?["level"] as? String == "error")
        #expect(objects.first?["message"] as? String == "timeout after 500ms")
    }
}
