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

    @Test func exportImportAndRevokeAsAUserWould() async throws {
        let home = try ScriptDirectory()
        let tv = try ScriptDirectory()
        let asHome = ["XDG_CONFIG_HOME": home.url.path]
        let asTV = ["XDG_CONFIG_HOME": tv.url.path]
        let exported = try await home.baton("account", "export-device", "Living Room TV", environment: asHome)
        #expect(exported.exitCode == 0, "\(exported)")
        #expect(exported.stderr.contains("keep it secret"))
        try tv.write("tv.baton", exported.stdout)
        // It holds a private key: import refuses it open to others (KeyFileTests).
        #expect(chmod(tv.url.appendingPathComponent("tv.baton").path, 0o600) == 0)
        let imported = try await tv.baton("account", "import", "tv.baton", environment: asTV)
        #expect(imported.exitCode == 0, "\(imported)")
        let homeAccount = try await show(home)
        let tvAccount = try await show(tv)
        #expect(tvAccount["fingerprint"] as? String == homeAccount["fingerprint"] as? String)
        #expect(tvAccount["holds_account_key"] as? Bool == false)
        let enrolled = try #require(homeAccount["enrolled"] as? [[String: Any]])
        #expect(enrolled.map { $0["name"] as? String } == ["Living Room TV"])
        #expect(enrolled.first?["id"] as? String == (tvAccount["device"] as? [String: Any])?["id"] as? String)

        // The joined device cannot enrol or revoke; the one holding the key can.
        let refused = try await tv.baton("account", "revoke", "Living Room TV", environment: asTV)
        #expect(refused.exitCode == 1 && refused.stderr.contains("does not hold the account's key"), "\(refused)")
        let revoked = try await home.baton("account", "revoke", "Living Room TV", "--json", environment: asHome)
        #expect(revoked.exitCode == 0, "\(revoked)")
        #expect(revoked.stdout.contains(#""revocation_list_version":1"#))
        let after = try #require(try await show(home)["enrolled"] as? [[String: Any]])
        #expect(after.first?["revoked"] as? Bool == true)

        // Not a device file: a clear error, and nothing replaced.
        try tv.write("junk", "{}")
        #expect(chmod(tv.url.appendingPathComponent("junk").path, 0o600) == 0)
        let junk = try await tv.baton("account", "import", "junk", environment: asTV)
        #expect(junk.exitCode == 1 && junk.stderr.contains("not a device file"), "\(junk)")
        #expect(try await show(tv)["fingerprint"] as? String == homeAccount["fingerprint"] as? String)
    }

    @Test func inviteGivesAOneTimeCodeAndKeepsOnlyItsHash() async throws {
        let home = try ScriptDirectory()
        let asHome = ["XDG_CONFIG_HOME": home.url.path]
        let before = Date()
        let r = try await home.baton("account", "invite", "--expires", "90s", "--json", environment: asHome)
        #expect(r.exitCode == 0, "\(r)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["code", "expires", "account"])
        let code = try #require(object["code"] as? String)
        #expect(code.range(of: #"^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){5}$"#, options: .regularExpression) != nil, "\(code)")
        let expires = try #require((object["expires"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(expires > before + 80 && expires < Date() + 91)
        #expect(object["account"] as? String == (try await show(home)["fingerprint"] as? String))
        // The folder keeps a hash, never the code; and nothing about it goes to standard error.
        let stored = try String(contentsOf: home.url.appendingPathComponent("baton/invites.json"), encoding: .utf8)
        #expect(!stored.contains(code) && !stored.contains(code.filter { $0 != "-" }))
        #expect(!r.stderr.contains(code))

        let text = try await home.baton("account", "invite", environment: asHome)
        #expect(text.exitCode == 0, "\(text)")
        #expect(text.stdout.hasPrefix("Invite code: ") && text.stdout.contains("(one use, expires "), "\(text)")
        #expect(text.stdout.contains("On the new device: baton account join "), "\(text)")

        for bad in ["0s", "500ms", "169h", "soon"] {
            let refused = try await home.baton("account", "invite", "--expires", bad, environment: asHome)
            #expect(refused.exitCode != 0 && refused.stderr.contains("Invalid --expires '\(bad)'"), "\(refused)")
        }
    }

    @Test func onlyTheDeviceHoldingTheAccountKeyInvites() async throws {
        let home = try ScriptDirectory()
        let tv = try ScriptDirectory()
        let exported = try await home.baton("account", "export-device", "TV", environment: ["XDG_CONFIG_HOME": home.url.path])
        try tv.write("tv.baton", exported.stdout)
        #expect(chmod(tv.url.appendingPathComponent("tv.baton").path, 0o600) == 0)
        let asTV = ["XDG_CONFIG_HOME": tv.url.path]
        #expect(try await tv.baton("account", "import", "tv.baton", environment: asTV).exitCode == 0)
        let refused = try await tv.baton("account", "invite", "--json", environment: asTV)
        #expect(refused.exitCode == 1, "\(refused)")
        #expect(refused.stderr.contains("does not hold the account's key; invite from the device that made the account"), "\(refused)")
        #expect(refused.stdout.isEmpty)
    }
}
