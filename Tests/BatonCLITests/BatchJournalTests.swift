import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton batch --journal` against what breaks journals: two runners at once, a runner killed
/// with -9 mid-write, a damaged header, a full disk. What the items really did is read from
/// their side effects (a file each item appends its key to), not from the report.
@Suite("Batch journals")
struct BatchJournalTests {
    /// Each item appends its key to effects.txt and writes the runner's pid to pid.txt; item
    /// `stop` (if any) then kills its own runner with -9; with `gated`, each item then waits
    /// until the test writes `release` (20 s at most). `verify` says an item is done when
    /// effects.txt has its key.
    static func job(killAt stop: String = "", gated: Bool = false) -> String {
        """
        local pid = io.open("/proc/self/stat"):read("n")
        local function has(key)
          local f = io.open("effects.txt")
          if not f then return false end
          local text = f:read("a") f:close()
          return text:find(key .. "\\n", 1, true) ~= nil
        end
        function job(item, ctx)
          local p = io.open("pid.txt", "w") p:write(pid) p:close()
          local f = io.open("effects.txt", "a") f:write(ctx.key, "\\n") f:close()
          if ctx.key == "\(stop)" then os.execute("kill -9 " .. pid) baton.sleep(30) end
          local deadline = baton.now() + 60
          while \(gated) and not io.open("release") and baton.now() < deadline do baton.sleep(0.02) end
        end
        function verify(item, ctx) return has(ctx.key) end
        """
    }

    static func items(_ count: Int) -> String {
        (1...count).map { #"{"key": "k\#($0)"}"# }.joined(separator: "\n") + "\n"
    }

    /// How many times each key is in effects.txt.
    static func effects(_ dir: ScriptDirectory) -> [String: Int] {
        let text = (try? String(contentsOf: dir.url.appendingPathComponent("effects.txt"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").reduce(into: [:]) { $0[String($1), default: 0] += 1 }
    }

    static func counts(_ dir: ScriptDirectory, _ name: String) throws -> [String: Int] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.url.appendingPathComponent(name))) as? [String: Any])
        return report["counts"] as? [String: Int] ?? [:]
    }

    /// Waits (60 s at most: a loaded machine starts a debug build slowly) until `file` in `dir`
    /// contains `text`.
    static func waitFor(_ text: String, in file: String, _ dir: ScriptDirectory) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let now = try? String(contentsOf: dir.url.appendingPathComponent(file), encoding: .utf8), now.contains(text) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("\(file) never held \(text)")
    }

    @Test("two runners on one journal: the second (new or --resume) exits 75 naming the first's pid and host; no item runs twice")
    func twoRunners() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job(gated: true))
        try dir.write("items.jsonl", Self.items(40))
        let command = ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "2", "--journal", "j", "--report", "r.json"]
        let first = Task { try await BatonProcess.run(command, directory: dir.url) }
        try await Self.waitFor(#""kind":"start""#, in: "j/journal.jsonl", dir)
        let pid = try String(contentsOf: dir.url.appendingPathComponent("pid.txt"), encoding: .utf8)

        let overlap = try await BatonProcess.run(command.map { $0 == "r.json" ? "r2.json" : $0 }, directory: dir.url)
        #expect(overlap.exitCode == 75, "\(overlap)")
        #expect(overlap.stderr.contains("is in use by another runner: pid \(pid) on host \"\(ProcessInfo.processInfo.hostName)\", since "), "\(overlap)")
        let resumed = try await BatonProcess.run(command.map { $0 == "r.json" ? "r3.json" : $0 } + ["--resume"], directory: dir.url)
        #expect(resumed.exitCode == 75, "\(resumed)")
        #expect(resumed.stderr.contains("pid \(pid)"), "\(resumed)")
        try dir.write("release", "now")

        let done = try await first.value
        #expect(done.exitCode == 0, "\(done)")
        #expect(try Self.counts(dir, "r.json")["succeeded"] == 40)
        let effects = Self.effects(dir)
        #expect(effects.count == 40 && effects.values.allSatisfy { $0 == 1 }, "\(effects)")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("r2.json").path))

        // Once the first is done, a resume may run: nothing is left to do.
        let after = try await BatonProcess.run(command + ["--resume"], directory: dir.url)
        #expect(after.exitCode == 0, "\(after)")
        #expect(try Self.counts(dir, "r.json")["skipped"] == 40)
        #expect(Self.effects(dir).values.allSatisfy { $0 == 1 })
    }

    @Test("kill -9 mid-item, then a torn last line: --resume --in-doubt skip cuts it, runs the rest once, counts the item in doubt; check asks verify (traced with its key)")
    func killedAndTorn() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job(killAt: "k3"))
        try dir.write("items.jsonl", Self.items(10))
        let command = ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "1", "--journal", "j"]
        let killed = try await BatonProcess.run(command, directory: dir.url)
        #expect(killed.exitCode == 128 + SIGKILL, "\(killed)")
        #expect(Self.effects(dir) == ["k1": 1, "k2": 1, "k3": 1])

        // As if the runner had died writing k3's end: half a record, no newline.
        let journal = dir.url.appendingPathComponent("j/journal.jsonl")
        let handle = try FileHandle(forWritingTo: journal)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"kind":"end","key":"k3","sta"#.utf8))
        try handle.close()

        let resumed = try await BatonProcess.run(command + ["--resume", "--in-doubt", "skip", "--report", "r.json"], directory: dir.url)
        #expect(resumed.exitCode == 0, "\(resumed)")
        #expect(resumed.stderr.contains("cut the torn last line of j/journal.jsonl (29 bytes"), "\(resumed)")
        let c = try Self.counts(dir, "r.json")
        #expect(c["in_doubt"] == 1 && c["skipped"] == 2 && c["succeeded"] == 7, "\(c)")
        let lines = try String(contentsOf: journal, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "", "the journal ends with a whole line")
        #expect(lines.dropLast().allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil }, "\(lines)")

        // Again: the item is still in doubt, nothing runs twice.
        let again = try await BatonProcess.run(command + ["--resume", "--in-doubt", "skip", "--report", "r2.json"], directory: dir.url)
        #expect(again.exitCode == 0, "\(again)")
        let c2 = try Self.counts(dir, "r2.json")
        #expect(c2["in_doubt"] == 1 && c2["skipped"] == 9, "\(c2)")
        #expect(Self.effects(dir).allSatisfy { $0.value == 1 } && Self.effects(dir).count == 10, "\(Self.effects(dir))")

        // check: verify finds k3's effect; the trace shows the call with the item's key.
        let checked = try await BatonProcess.run(command + ["--resume", "--in-doubt", "check", "--report", "r3.json", "--trace", "t.jsonl"], directory: dir.url)
        #expect(checked.exitCode == 0, "\(checked)")
        let c3 = try Self.counts(dir, "r3.json")
        #expect(c3["in_doubt"] == 0 && c3["succeeded"] == 1 && c3["skipped"] == 9, "\(c3)")
        #expect(Self.effects(dir)["k3"] == 1)
        let trace = try String(contentsOf: dir.url.appendingPathComponent("t.jsonl"), encoding: .utf8)
        let verify = trace.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["kind"] as? String == "verify" }
        #expect(verify?["item"] as? String == "k3" && verify?["done"] as? Bool == true, "\(trace)")
        let shown = try await dir.baton("trace", "show", "t.jsonl")
        #expect(shown.stdout.contains("verify k3  done"), "\(shown)")
    }

    @Test("a journal without a valid header is refused (exit 2), --force or not; a new batch on a journal that holds one is refused")
    func damagedHeader() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job(killAt: "k2"))
        try dir.write("items.jsonl", Self.items(4))
        let command = ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "1", "--journal", "j"]
        _ = try await BatonProcess.run(command, directory: dir.url)
        let journal = dir.url.appendingPathComponent("j/journal.jsonl")
        let text = try String(contentsOf: journal, encoding: .utf8)
        let header = try #require(text.split(separator: "\n").first)
        #expect(header.contains(#""kind":"batch""#), "\(text)")

        // The header's digest cut short, as a bad disk might: another input must not resume.
        try Data(text.replacingOccurrences(of: #""input_sha256":""#, with: #""input_sha256":"0"#).utf8).write(to: journal)
        try dir.write("items.jsonl", Self.items(6))
        for extra in [[], ["--force"]] {
            let resumed = try await BatonProcess.run(command + ["--resume"] + extra, directory: dir.url)
            #expect(resumed.exitCode == 2, "\(resumed)")
            #expect(resumed.stderr.contains("j/journal.jsonl has no valid header"), "\(resumed)")
        }
        #expect(Self.effects(dir) == ["k1": 1, "k2": 1], "nothing ran")
        let fresh = try await BatonProcess.run(command, directory: dir.url)
        #expect(fresh.exitCode == 2 && fresh.stderr.contains("already holds a batch"), "\(fresh)")
    }

    @Test("a damaged line in the middle of a journal (an item's start may be lost) is refused unless --force")
    func damagedMiddle() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job(killAt: "k2"))
        try dir.write("items.jsonl", Self.items(4))
        let command = ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "1", "--journal", "j"]
        _ = try await BatonProcess.run(command, directory: dir.url)
        let journal = dir.url.appendingPathComponent("j/journal.jsonl")
        var lines = try String(contentsOf: journal, encoding: .utf8).split(separator: "\n").map(String.init)
        // What the old runner left: the next record appended onto a torn one.
        lines[2] = String(lines[2].prefix(12)) + lines[2]
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: journal)
        let refused = try await BatonProcess.run(command + ["--resume"], directory: dir.url)
        #expect(refused.exitCode == 2, "\(refused)")
        #expect(refused.stderr.contains("has 1 damaged line(s) (line 3)") && refused.stderr.contains("give --force"), "\(refused)")
        #expect(Self.effects(dir) == ["k1": 1, "k2": 1], "nothing ran")
        let forced = try await BatonProcess.run(command + ["--resume", "--force", "--in-doubt", "skip"], directory: dir.url)
        #expect(forced.exitCode == 0, "\(forced)")
        #expect(Self.effects(dir) == ["k1": 1, "k2": 1, "k3": 1, "k4": 1], "\(Self.effects(dir))")
    }

    /// A 1 MiB tmpfs mounted at `dir/disk` for the test's length.
    static func smallDisk(_ dir: ScriptDirectory) throws -> String {
        let path = dir.url.appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", path]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "cannot mount a tmpfs at \(path)")
        return path
    }

    static func unmount(_ path: String) {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = ["-l", path]
        try? umount.run()
        umount.waitUntilExit()
    }

    @Test("a full disk: the journal cannot be written: the batch stops, says why on stderr and exits 74; the journal ends with a whole line")
    func fullDiskJournal() async throws {
        let dir = try ScriptDirectory()
        let disk = try Self.smallDisk(dir)
        defer { Self.unmount(disk) }
        try dir.write("job.lua", "function job(item, ctx) end")
        try dir.write("items.jsonl", Self.items(20_000))
        let result = try await BatonProcess.run(
            ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "4", "--journal", "disk/j", "--report", "disk/r.json"],
            directory: dir.url, limit: 60)
        #expect(result.exitCode == 74, "\(result)")
        #expect(result.stderr.contains("cannot write the journal disk/j/journal.jsonl: No space left on device"), "\(result)")
        #expect(result.stderr.contains("journal_failed, 20000 items"), "\(result)")
        let journal = try String(contentsOf: URL(fileURLWithPath: disk + "/j/journal.jsonl"), encoding: .utf8)
        #expect(journal.hasSuffix("\n"))
        #expect(journal.split(separator: "\n").allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
    }

    @Test("a full disk: a report that cannot be written fails the batch with exit 74 and the error on stderr")
    func fullDiskReport() async throws {
        let dir = try ScriptDirectory()
        let disk = try Self.smallDisk(dir)
        defer { Self.unmount(disk) }
        // The disk filled to the last byte.
        let fd = open(disk + "/filler", O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 0, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        #expect(errno == ENOSPC)
        close(fd)
        try dir.write("job.lua", "function job(item, ctx) end")
        try dir.write("items.jsonl", Self.items(300))
        let result = try await BatonProcess.run(
            ["batch", "job.lua", "--input", "items.jsonl", "--report", "disk/r.json"], directory: dir.url)
        #expect(result.exitCode == 74, "\(result)")
        #expect(result.stderr.contains("cannot write the report disk/r.json: "), "\(result)")
        #expect(result.stderr.contains("No space left on device"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: disk + "/r.json"), "no report cut short is left")
    }
}
