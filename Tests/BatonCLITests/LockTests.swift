import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton run --lock` and `baton.lock`: runs of one job exclude each other across processes,
/// with kernel locks that a killed run does not leave behind.
@Suite("Locks", .serialized)
struct LockTests {
    /// A script that takes what it takes (a `--lock`, or `baton.lock` inside), writes `held`,
    /// and holds it until the test writes `release` (20 s at most).
    static let holder = """
        local lease = LEASE
        local f = io.open("held", "w") f:write("yes") f:close()
        local deadline = baton.now() + 20
        while not io.open("release") and baton.now() < deadline do baton.sleep(0.02) end
        """

    /// Starts `baton ARGS...` holding a lock in `dir`, and waits until it holds it.
    func startHolder(_ dir: ScriptDirectory, _ arguments: [String], lease: String = "nil") async throws -> Task<BatonResult, any Error> {
        try dir.write("holder.lua", Self.holder.replacingOccurrences(of: "LEASE", with: lease))
        let environment = ["BATON_LOCK_DIR": dir.url.appendingPathComponent("locks").path]
        let task = Task { try await BatonProcess.run(arguments + ["holder.lua"], environment: environment, directory: dir.url) }
        let held = dir.url.appendingPathComponent("held").path
        let start = Date()
        while !FileManager.default.fileExists(atPath: held), Date().timeIntervalSince(start) < 60 { try await Task.sleep(for: .milliseconds(20)) }
        if !FileManager.default.fileExists(atPath: held) {
            try release(dir)
            Issue.record("the holder never took the lock: \(try await task.value)")
        }
        return task
    }

    func run(_ dir: ScriptDirectory, _ arguments: [String]) async throws -> BatonResult {
        try await BatonProcess.run(arguments, environment: ["BATON_LOCK_DIR": dir.url.appendingPathComponent("locks").path], directory: dir.url)
    }

    func release(_ dir: ScriptDirectory) throws {
        try dir.write("release", "now")
    }

    @Test("a second run of a locked job: fail exits 75 naming the holder, skip exits 0 running nothing, wait runs once the first is done")
    func conflicts() async throws {
        let dir = try ScriptDirectory()
        let first = try await startHolder(dir, ["run", "--lock", "nightly"])
        let failed = try await run(dir, ["run", "--lock", "nightly", "-e", "print('ran')"])
        #expect(failed.exitCode == 75, "\(failed)")
        #expect(failed.stdout == "")
        #expect(failed.stderr.hasPrefix("lock nightly is held by pid "), "\(failed)")
        #expect(failed.stderr.contains("run --lock nightly holder.lua"), "\(failed)")
        let skipped = try await run(dir, ["run", "--lock", "nightly", "--on-conflict", "skip", "-e", "print('ran')"])
        #expect(skipped.exitCode == 0, "\(skipped)")
        #expect(skipped.stdout == "")
        #expect(skipped.stderr.contains("skipped: lock nightly is held"), "\(skipped)")
        let status = try await run(dir, ["lock", "status", "nightly"])
        #expect(status.exitCode == 1, "\(status)")
        #expect(status.stdout.hasPrefix("nightly: held by pid "), "\(status)")
        // wait: the holder lets go while the second waits.
        async let waited = run(dir, ["run", "--lock", "nightly", "--lock-wait", "20s", "-e", "print('ran after')"])
        try await Task.sleep(for: .milliseconds(200))
        try release(dir)
        let after = try await waited
        #expect(after.exitCode == 0, "\(after)")
        #expect(after.stdout == "ran after\n")
        #expect(try await first.value.exitCode == 0)
        let free = try await run(dir, ["lock", "status", "--json"])
        #expect(free.stdout.contains(#""name":"nightly","held":false"#), "\(free)")
    }

    @Test("a holder killed with -9 leaves nothing stale: the next run gets the lock at once")
    func killedHolder() async throws {
        let dir = try ScriptDirectory()
        let first = try await startHolder(dir, ["run", "--lock", "nightly"])
        let status = try await run(dir, ["lock", "status", "nightly", "--json"])
        let pid = try #require((status.stdout.firstMatch(of: /"pid":(\d+)/)?.1).flatMap { Int32($0) })
        kill(pid, SIGKILL)
        #expect(try await first.value.exitCode == 137)
        let next = try await run(dir, ["run", "--lock", "nightly", "-e", "print('ran')"])
        #expect(next.exitCode == 0, "\(next)")
        #expect(next.stdout == "ran\n")
    }

    @Test("baton.lock: a lease another process holds raises lock_held (exit 75) or is waited for; closing it lets go")
    func leases() async throws {
        let dir = try ScriptDirectory()
        let first = try await startHolder(dir, ["run"], lease: #"baton.lock("tv")"#)
        let refused = try await run(dir, ["run", "-e", #"local l <close> = baton.lock("tv") print("got it")"#])
        #expect(refused.exitCode == 75, "\(refused)")
        #expect(refused.stderr.hasPrefix("(command line):1: lock tv is held by pid "), "\(refused)")
        let caught = try await run(dir, ["run", "-e", #"local ok, err = pcall(baton.lock, "tv") print(ok, err.class)"#])
        #expect(caught.stdout == "false\tlock_held\n", "\(caught)")
        async let waited = run(dir, ["run", "-e", """
            do local l <close> = baton.lock("tv", {wait = 20}) print("got it", l:held()) end
            local again = baton.lock("tv") print("and again") again:release() print(again:held())
            """])
        try await Task.sleep(for: .milliseconds(200))
        try release(dir)
        let after = try await waited
        #expect(after.exitCode == 0, "\(after)")
        #expect(after.stdout == "got it\ttrue\nand again\nfalse\n")
        #expect(try await first.value.exitCode == 0)
    }

    @Test("lock usage mistakes are usage errors", arguments: [
        (["run", "--lock", "../x", "-e", "1"], "Invalid --lock"),
        (["run", "--lock", "a", "--on-conflict", "retry", "-e", "1"], "Invalid --on-conflict"),
        (["run", "--on-conflict", "skip", "-e", "1"], "go with --lock NAME"),
        (["run", "--lock", "a", "--lock-wait", "soon", "-e", "1"], "Invalid --lock-wait"),
    ])
    func mistakes(arguments: [String], says: String) async throws {
        let dir = try ScriptDirectory()
        let result = try await run(dir, arguments)
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.contains(says), "\(result)")
    }
}
