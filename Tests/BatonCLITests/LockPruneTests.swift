import Foundation
import Testing

/// `baton lock status --prune`: the files of locks nobody holds go, a held one never does.
@Suite("Lock pruning")
struct LockPruneTests {
    @Test("--prune removes the files of free locks, keeps the held one (its holder unaffected), and lists what is left")
    func prune() async throws {
        let dir = try ScriptDirectory()
        let locks = dir.url.appendingPathComponent("locks").path
        let environment = ["BATON_LOCK_DIR": locks]
        func baton(_ arguments: String...) async throws -> BatonResult {
            try await BatonProcess.run(arguments, environment: environment, directory: dir.url)
        }
        for name in ["old-a", "old-b"] {
            let ran = try await baton("run", "--lock", name, "-e", "x = 1")
            #expect(ran.exitCode == 0, "\(ran)")
        }
        // A holder that keeps "busy" until the test writes `release`.
        try dir.write("hold.lua", """
            local f = io.open("held", "w") f:write("yes") f:close()
            local deadline = baton.now() + 20
            while not io.open("release") and baton.now() < deadline do baton.sleep(0.02) end
            """)
        let holder = Task { try await BatonProcess.run(["run", "--lock", "busy", "hold.lua"], environment: environment, directory: dir.url) }
        let held = dir.url.appendingPathComponent("held").path
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: held), Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }

        let before = try await baton("lock", "status")
        #expect(before.stdoutLines.count == 3, "\(before)")
        let pruned = try await baton("lock", "status", "--prune")
        #expect(pruned.exitCode == 0, "\(pruned)")
        #expect(pruned.stdoutLines.first == "pruned 2 locks nobody held: old-a, old-b", "\(pruned)")
        #expect(pruned.stdoutLines.dropFirst().count == 1 && pruned.stdout.contains("busy: held by pid "), "\(pruned)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: locks) == ["busy.lock"])
        // The held lock still excludes.
        let second = try await baton("run", "--lock", "busy", "-e", "x = 1")
        #expect(second.exitCode == 75, "\(second)")
        try dir.write("release", "now")
        #expect(try await holder.value.exitCode == 0)
        let nothing = try await baton("lock", "status", "--prune")
        #expect(nothing.stdoutLines == ["pruned 1 lock nobody held: busy", "no locks in \(locks)"], "\(nothing)")
        let named = try await baton("lock", "status", "busy", "--prune")
        #expect(named.exitCode == 2, "\(named)")
    }
}
