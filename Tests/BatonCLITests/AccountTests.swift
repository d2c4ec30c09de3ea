import Foundation
import Testing

@Suite("baton account")
struct AccountTests {
    /// `baton account show --json` with the configuration folder in `dir`.
    func show(_ dir: ScriptDirectory) async throws -> [String: Any] {
        let r = try await dir.baton("account", "show", "--json", environment: ["XDG_CONFIG_HOME": dir.url.path])
        #expect(r.exitCode == 0, "\(r)")
        return try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
    }

    @Test func firstUseMakesTheAccountAndLaterUsesReadIt() async throws {
        let dir = try ScriptDirectory()
        let first = try await show(dir)
        let fingerprint = try #require(first["fingerprint"] as? String)
        #expect(fingerprint.count == 64)
        #expect(first["holds_account_key"] as? Bool == true)
        let again = try await show(dir)
        #expect(again["fingerprint"] as? String == fingerprint)
        let keys = try String(contentsOf: dir.url.appendingPathComponent("baton/device-key.pem"), encoding: .utf8)
        #expect(!keys.isEmpty)
        // No key ever reaches the output.
        let text = try await dir.baton("account", "show", environment: ["XDG_CONFIG_HOME": dir.url.path])
        #expect(!text.stdout.contains("PRIVATE KEY") && !text.stdout.contains(keys.split(separator: "\n")[1]))
        #expect(text.stdout.contains(fingerprint))
    }

    @Test func commandsStartedAtOnceOnFirstUseMakeOneAccount() async throws {
        let dir = try ScriptDirectory()
        let fingerprints = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<6 { group.addTask { try await show(dir)["fingerprint"] as? String } }
            return try await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(fingerprints.count == 6)
        #expect(Set(fingerprints).count == 1)
        #expect(fingerprints.allSatisfy { $0 != nil })
    }

    @Test func aFolderThatCannotBeMadeIsAClearError() async throws {
        let dir = try ScriptDirectory()
        try dir.write("blocker", "a file where the folder would go")
        let r = try await dir.baton("account", "show", environment: ["XDG_CONFIG_HOME": dir.url.appendingPathComponent("blocker").path])
        #expect(r.exitCode == 1)
        #expect(r.stderr.contains("cannot create"), "\(r)")
    }
}
