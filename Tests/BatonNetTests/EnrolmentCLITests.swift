import BatonCore
import Foundation
import Testing

/// `baton account invite` and `join` as a user runs them: the holder's agent answers the code,
/// once, before it expires, and only an agent of the code's account hears its secret.
@Suite("Enrolment on the command line", .timeLimit(.minutes(3)))
struct EnrolmentCLITests {
    /// `baton account invite --expires DURATION --json` as `holder`: the code.
    static func invite(_ holder: TestAccount, expires: String = "10m", sourceLocation: SourceLocation = #_sourceLocation) async throws -> (String, CLIResult) {
        let result = try await runBaton(["account", "invite", "--expires", expires, "--json"], xdg: holder.home.path)
        #expect(result.code == 0, "\(result)", sourceLocation: sourceLocation)
        let code = try #require(result.json(sourceLocation: sourceLocation)?["code"]?.stringValue, "\(result)", sourceLocation: sourceLocation)
        return (code, result)
    }

    /// `baton account join CODE --from AGENT --json` from the XDG_CONFIG_HOME `home`.
    static func join(_ code: String, at agent: AgentProcess, from home: TemporaryDirectory, name: String = "newcomer") async throws -> CLIResult {
        try await runBaton(["account", "join", code, "--from", agent.address.description, "--name", name, "--json"], xdg: home.path)
    }

    /// `baton account show --json` for `home`.
    static func show(_ home: String) async throws -> (JSON?, CLIResult) {
        let result = try await runBaton(["account", "show", "--json"], xdg: home)
        #expect(result.code == 0, "\(result)")
        return (result.json(), result)
    }

    @Test("a code joins a device through the holder's agent, once; the device is then served as its account's")
    func joinOnce() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, arguments: ["--verbose"], home: holder.home.path)
        let (code, invite) = try await Self.invite(holder)
        var outputs: [String: String] = ["invite stderr": invite.stderr]

        let laptop = try TemporaryDirectory("baton-joining")
        let joined = try await Self.join(code, at: agent, from: laptop, name: "laptop")
        outputs["join"] = joined.description
        #expect(joined.code == 0, "\(joined)")
        let object = joined.json()
        let laptopID = laptop.read("baton/device-id")?.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(object?["account"] == .string(holder.fingerprint))
        #expect(object?["device"]?["id"] == laptopID.map(JSON.string))
        #expect(object?["device"]?["name"] == .string("laptop"))
        #expect(object?["agent"] == .string(agent.address.description))
        #expect(agent.log.contains("enrolled a device") && agent.log.contains(laptopID ?? "?"), "\(agent.log)")

        // The new device is of the account: an app not marked anonymous launches for it.
        let launch = try await runBaton(["launch", agent.address.description, "media:joined", "--app", Fixtures.player], xdg: laptop.path)
        outputs["launch as laptop"] = launch.description
        #expect(launch.code == 0, "\(launch)")
        #expect(launch.stdout == "success\n")
        let (laptopAccount, laptopShow) = try await Self.show(laptop.path)
        outputs["show as laptop"] = laptopShow.description
        #expect(laptopAccount?["fingerprint"] == .string(holder.fingerprint))
        #expect(laptopAccount?["holds_account_key"] == .bool(false))
        let (holderAccount, holderShow) = try await Self.show(holder.home.path)
        outputs["show as holder"] = holderShow.description
        let enrolled = holderAccount?["enrolled"]?.arrayValue ?? []
        #expect(enrolled.contains { $0["id"] == laptopID.map(JSON.string) && $0["name"] == .string("laptop") }, "\(holderShow)")

        // The same code again, from another new device: refused, and that device is unchanged.
        let phone = try TemporaryDirectory("baton-joining")
        let (phoneBefore, phoneShowBefore) = try await Self.show(phone.path)
        outputs["show as phone before"] = phoneShowBefore.description
        let again = try await Self.join(code, at: agent, from: phone, name: "phone")
        outputs["join again"] = again.description
        #expect(again.code == 1, "\(again)")
        #expect(again.stderr.contains("already been used"), "\(again)")
        #expect(again.stdout.isEmpty, "\(again)")
        let (phoneAfter, phoneShowAfter) = try await Self.show(phone.path)
        outputs["show as phone after"] = phoneShowAfter.description
        #expect(phoneAfter?["fingerprint"] == phoneBefore?["fingerprint"])
        #expect(phoneAfter?["fingerprint"] != .string(holder.fingerprint))
        let logged = await eventually { agent.log.contains("refused a device joining the account") && agent.log.contains("already been used") }
        #expect(logged, "\(agent.log)")

        // The agent serves on.
        let after = try await runBaton(["launch", agent.address.description, "media:after", "--app", Fixtures.player], xdg: laptop.path)
        outputs["launch after"] = after.description
        #expect(after.code == 0, "\(after)")
        #expect(await agent.stop() == 0, "\(agent.log)")
        outputs["agent log"] = agent.log
        expectNoSecrets(in: outputs, keysIn: [holder.folder.path, laptop.path + "/baton", phone.path + "/baton"], codes: [code])
    }

    @Test("an expired code is refused, saying it expired")
    func expiredCode() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let (code, invite) = try await Self.invite(holder, expires: "1s")
        // Not a timing assertion: the code must have lapsed before it is tried.
        try await Task.sleep(for: .milliseconds(2200))
        let home = try TemporaryDirectory("baton-joining")
        let late = try await Self.join(code, at: agent, from: home)
        #expect(late.code == 1, "\(late)")
        #expect(late.stderr.contains("expired"), "\(late)")
        #expect(late.stdout.isEmpty)
        let logged = await eventually { agent.log.contains("refused a device joining the account") && agent.log.contains("expired") }
        #expect(logged, "\(agent.log)")

        let served = try await runBaton(["launch", agent.address.description, "media:x", "--app", Fixtures.player], xdg: holder.home.path)
        #expect(served.code == 0, "\(served)")
        #expect(await agent.stop() == 0, "\(agent.log)")
        expectNoSecrets(in: ["invite stderr": invite.stderr, "join": late.description, "launch": served.description, "agent log": agent.log],
                        keysIn: [holder.folder.path, home.path + "/baton"], codes: [code])
    }

    @Test("a device the agent refuses (a blank name) does not spend the code: it joins with a name after")
    func refusedDeviceKeepsCode() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let (code, invite) = try await Self.invite(holder)
        let home = try TemporaryDirectory("baton-joining")
        let blank = try await Self.join(code, at: agent, from: home, name: "   ")
        #expect(blank.code == 1, "\(blank)")
        #expect(blank.stderr.contains("name is empty"), "\(blank)")
        #expect(blank.stdout.isEmpty)

        let named = try await Self.join(code, at: agent, from: home, name: "tablet")
        #expect(named.code == 0, "\(named)")
        #expect(named.json()?["account"] == .string(holder.fingerprint), "\(named)")
        // Spent now.
        let other = try TemporaryDirectory("baton-joining")
        let again = try await Self.join(code, at: agent, from: other, name: "phone")
        #expect(again.code == 1, "\(again)")
        #expect(again.stderr.contains("already been used"), "\(again)")
        #expect(await agent.stop() == 0, "\(agent.log)")
        expectNoSecrets(in: ["invite stderr": invite.stderr, "blank": blank.description, "named": named.description, "agent log": agent.log],
                        keysIn: [holder.folder.path, home.path + "/baton"], codes: [code])
    }

    @Test("a mistyped code is a usage error that does not repeat it", arguments: [
        "7K3Q-M2XD-AB",
        "7K3Q-M2XD-ABCD-EFGH-JKMN-PQRSX",
        "7K3Q-M2XD-ABCD-EFGH-JKMN-PQR!",
        "UUUU-UUUU-UUUU-UUUU-UUUU-UUUU",
    ])
    func mistypedCode(_ code: String) async throws {
        let home = try TemporaryDirectory("baton-joining")
        let result = try await runBaton(["account", "join", code, "--from", "127.0.0.1:1"], xdg: home.path)
        #expect(result.code == 2, "\(result)")
        #expect(result.stderr.contains("not an invite code"), "\(result)")
        #expect(!result.stderr.contains(code), "\(result)")
        #expect(result.stdout.isEmpty)
    }

    @Test("joining through another account's agent fails in the TLS handshake, before the code is sent")
    func anotherAccountsAgent() async throws {
        let holder = try TestAccount()
        let stranger = try await AgentProcess.start(config: Fixtures.config, account: nil)
        let holderAgent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let (code, invite) = try await Self.invite(holder)
        let home = try TemporaryDirectory("baton-joining")

        let wrong = try await Self.join(code, at: stranger, from: home)
        #expect(wrong.code == 1, "\(wrong)")
        #expect(wrong.stderr.contains("belongs to another account"), "\(wrong)")
        #expect(wrong.stderr.contains("not the one the invite code is for"), "\(wrong)")
        #expect(wrong.stdout.isEmpty)
        let logged = await eventually { stranger.log.contains("the caller refused this agent's certificate") }
        #expect(logged, "\(stranger.log)")
        #expect(!stranger.log.contains("joining") && !stranger.log.contains("enrolled"), "the stranger heard a join:\n\(stranger.log)")

        // The code was not spent: it still works through an agent of its account.
        let right = try await Self.join(code, at: holderAgent, from: home)
        #expect(right.code == 0, "\(right)")
        #expect(right.json()?["account"] == .string(holder.fingerprint))
        #expect(await stranger.stop() == 0, "\(stranger.log)")
        #expect(await holderAgent.stop() == 0, "\(holderAgent.log)")
        expectNoSecrets(
            in: ["invite stderr": invite.stderr, "join stranger": wrong.description, "join": right.description,
                 "stranger log": stranger.log, "holder agent log": holderAgent.log],
            keysIn: [holder.folder.path, home.path + "/baton", stranger.directory.path + "/xdg/baton"], codes: [code])
    }

    @Test("an agent of the account that does not hold its key cannot enrol: the join says so")
    func agentWithoutTheAccountKey() async throws {
        let holder = try TestAccount()
        let tv = try await AgentProcess.start(config: Fixtures.config, account: holder)
        let (code, invite) = try await Self.invite(holder)
        let home = try TemporaryDirectory("baton-joining")
        let result = try await Self.join(code, at: tv, from: home)
        #expect(result.code == 1, "\(result)")
        #expect(result.stderr.contains("the agent cannot enrol devices"), "\(result)")
        #expect(result.stderr.contains("does not hold the account's key"), "\(result)")
        let logged = await eventually { tv.log.contains("refused a device joining the account") }
        #expect(logged, "\(tv.log)")
        let (after, _) = try await Self.show(home.path)
        #expect(after?["fingerprint"] != .string(holder.fingerprint))
        #expect(await tv.stop() == 0, "\(tv.log)")
        expectNoSecrets(in: ["invite stderr": invite.stderr, "join": result.description, "agent log": tv.log],
                        keysIn: [holder.folder.path, home.path + "/baton", tv.directory.path + "/xdg/baton"], codes: [code])
    }

    @Test("baton account show, revoke and export-device's stderr show no key material")
    func noKeyMaterial() async throws {
        let holder = try TestAccount()
        let device = try holder.device(named: "tv")
        var results: [String: CLIResult] = [:]
        for (name, arguments, home) in [
            ("show --json as holder", ["account", "show", "--json"], holder.home.path),
            ("show as holder", ["account", "show"], holder.home.path),
            ("show --json as device", ["account", "show", "--json"], device.home.path),
            ("show as device", ["account", "show"], device.home.path),
            ("revoke --json", ["account", "revoke", "tv", "--json"], holder.home.path),
        ] {
            let result = try await runBaton(arguments, xdg: home)
            #expect(result.code == 0, "\(name): \(result)")
            #expect(!result.stdout.contains("-----BEGIN"), "\(name): \(result)")
            results[name] = result
        }
        let shown = try #require(results["show --json as holder"]?.json())
        #expect(shown.objectValue?.map(\.key) == ["fingerprint", "device", "holds_account_key", "enrolled", "revocation_list_version", "folder"])
        #expect(shown["holds_account_key"] == .bool(true))

        let exported = try await runBaton(["account", "export-device", "spare"], xdg: holder.home.path)
        #expect(exported.code == 0, "\(exported)")
        // The device file is a secret by design (it goes to stdout, for a file); stderr says
        // so and shows none of it.
        #expect(exported.stderr.contains("keep it secret"))
        var outputs = results.mapValues(\.description)
        outputs["export-device stderr"] = exported.stderr
        expectNoSecrets(in: outputs, keysIn: [holder.folder.path, device.folder.path])
    }
}
