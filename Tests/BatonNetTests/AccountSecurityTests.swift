import BatonClient
import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Foundation
import Logging
import NIOCore
import Testing

/// An agent configuration with one app for its own account's devices, one for anyone, and a
/// handler; each writes the file named by `data.out` (or the message's `out`) when it runs, so
/// a test can tell that nothing ran.
enum AccountFixtures {
    static let privateApp = "org.test.private"
    static let publicApp = "org.test.public"

    static let config = #"""
        device{ name = "Account Test", kind = "tv" }

        local function touch(path)
          if path then
            local f = assert(io.open(path, "w"))
            f:write("ran")
            f:close()
          end
        end

        handler{ scheme = "door", run = { "/bin/sh", "-c", [[echo ran > "$1"]], "sh", "{data.out}" } }

        app{ id = "org.test.private", name = "Private", schemes = { "private" },
             launch = function(uri, data) touch(data.out) end,
             services = { peek = function(msg) touch(msg.out) return { photos = 12 } end } }

        app{ id = "org.test.public", name = "Public", anonymous = true, schemes = { "public" },
             launch = function(uri, data) touch(data.out) end,
             services = { echo = function(msg) return msg end } }
        """#

    /// The agent's own configuration folder (its XDG_CONFIG_HOME is `directory`/xdg).
    static func folder(of agent: AgentProcess) -> ConfigurationFolder {
        ConfigurationFolder(path: agent.directory.path + "/xdg/baton")
    }
}

/// What must never show: PEM private keys, the base64 of any key kept in `folders`, and
/// `codes` (invite codes, with or without their dashes), in any of `outputs` (what each
/// command printed, each agent's log), named by their keys.
func expectNoSecrets(
    in outputs: [String: String], keysIn folders: [String], codes: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
) {
    var secrets = codes.flatMap { [$0, $0.filter { $0 != "-" }] }
    for folder in folders {
        let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
        for file in files where file.hasSuffix("key.pem") {
            let text = (try? String(contentsOfFile: folder + "/" + file, encoding: .utf8)) ?? ""
            secrets += text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("-----") && $0.count >= 16 }
        }
    }
    #expect(secrets.count >= folders.count * 2, "no keys found in \(folders)", sourceLocation: sourceLocation)
    for (name, text) in outputs.sorted(by: { $0.key < $1.key }) {
        #expect(!text.contains("PRIVATE KEY"), "\(name) shows a private key:\n\(text)", sourceLocation: sourceLocation)
        for secret in secrets where text.contains(secret) {
            Issue.record("\(name) shows a secret (\(secret.prefix(8))…):\n\(text)", sourceLocation: sourceLocation)
        }
    }
}

/// Two accounts on one machine, revocation, and certificates an agent must refuse, with real
/// agent processes over real sockets.
@Suite("Accounts: who an agent serves", .timeLimit(.minutes(3)))
struct AccountSecurityTests {
    typealias F = AccountFixtures

    @Test("a device of the agent's own account launches, opens and sends on any app")
    func sameAccount() async throws {
        try await withAgent(F.config) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let launched = agent.directory.file("private.launched")
            let (status, detail) = await client.launch(LaunchRequest(uri: "private:film", data: ["out": .string(launched)]), on: agent.address)
            #expect(status == .success, "\(detail)")
            #expect(agent.directory.read("private.launched") == "ran")

            let (channel, openStatus, openDetail) = await client.openService("peek", app: F.privateApp, on: agent.address)
            let peek = try #require(channel, "\(openStatus): \(openDetail)")
            #expect(Fixtures.message(await peek.send(["out": .string(agent.directory.file("private.peeked"))])) == ["photos": .int(12)])
            #expect(agent.directory.read("private.peeked") == "ran")
            peek.close()

            let (_, apps) = try await client.describe(agent.address).get()
            #expect(apps.map(\.id) == [F.privateApp, F.publicApp])

            let cli = try await runBaton(["launch", agent.address.description, "private:cli", "--data", #"{"out": "\#(agent.directory.file("cli.launched"))"}"#])
            #expect(cli.code == 0, "\(cli)")
            #expect(cli.stdout == "success\n")
        }
    }

    @Test("another account's device: denied_by_remote_system and not_authorized for non-anonymous apps, and nothing runs")
    func otherAccountIsAnonymous() async throws {
        let other = try TestAccount()
        try await withAgent(F.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            let own = makeClient()
            defer { own.shutdown() }

            let app = await stranger.launch(LaunchRequest(uri: "private:film", data: ["out": .string(agent.directory.file("app.ran"))]), on: agent.address)
            #expect(app.0 == .deniedByRemoteSystem, "\(app.1)")
            #expect(app.1 == "nothing on \(agent.name) takes private: URIs from other accounts", "\(app.1)")
            let handler = await stranger.launch(LaunchRequest(uri: "door:front", data: ["out": .string(agent.directory.file("handler.ran"))]), on: agent.address)
            #expect(handler.0 == .deniedByRemoteSystem, "\(handler.1)")
            #expect(handler.1 == "nothing on \(agent.name) takes door: URIs from other accounts", "\(handler.1)")
            let named = await stranger.launch(LaunchRequest(uri: "private:x", appID: F.privateApp, data: ["out": .string(agent.directory.file("named.ran"))]), on: agent.address)
            #expect(named.0 == .deniedByRemoteSystem, "\(named.1)")

            let (channel, openStatus, openDetail) = await stranger.openService("peek", app: F.privateApp, on: agent.address)
            #expect(channel == nil)
            #expect(openStatus == .notAuthorized, "\(openDetail)")
            #expect(openDetail == "no app \(F.privateApp) on \(agent.name) serves other accounts", "\(openDetail)")
            let sent = try await stranger.send(["out": .string(agent.directory.file("peek.ran"))], to: "peek", app: F.privateApp, on: agent.address).get()
            #expect(sent.status == .failure, "\(sent)")
            #expect(sent.detail.hasPrefix("the channel did not open: not_authorized"), "\(sent)")
            #expect(sent.cause == .refused, "\(sent)")

            // What the agent's own account starts afterwards runs (the handler too); what the
            // stranger asked for never did.
            let mark = agent.directory.file("own.ran")
            #expect(await own.launch(LaunchRequest(uri: "door:own", data: ["out": .string(mark)]), on: agent.address).0 == .success)
            let ran = await eventually { agent.directory.read("own.ran") != nil }
            #expect(ran, "the handler never ran for the agent's own account; log:\n\(agent.log)")
            for file in ["app.ran", "handler.ran", "named.ran", "peek.ran"] {
                #expect(agent.directory.read(file) == nil, "\(file) was written: it ran for a stranger")
            }
            #expect(agent.log.contains("refused an anonymous launch"), "\(agent.log)")

            // The app marked anonymous is served to the stranger.
            let served = await stranger.launch(LaunchRequest(uri: "public:hello", data: ["out": .string(agent.directory.file("public.ran"))]), on: agent.address)
            #expect(served.0 == .success, "\(served.1)")
            #expect(agent.directory.read("public.ran") == "ran")
            let echo = try await stranger.send(["hi": .string("there")], to: "echo", app: F.publicApp, on: agent.address).get()
            #expect(Fixtures.message(echo) == ["hi": .string("there")])
            let (_, apps) = try await stranger.describe(agent.address).get()
            #expect(apps.map(\.id) == [F.publicApp])
            expectNoSecrets(in: ["agent log": agent.log], keysIn: [other.folder.path, TestAccount.shared.folder.path, F.folder(of: agent).path])
        }
    }

    @Test("baton --authorization anonymous as another account: the anonymous app only")
    func otherAccountOnTheCommandLine() async throws {
        let other = try TestAccount()
        try await withAgent(F.config) { agent in
            let device = agent.address.description
            let anonymous = ["--authorization", "anonymous"]
            func data(_ name: String) -> [String] { ["--data", #"{"out": "\#(agent.directory.file(name))"}"#] }
            var outputs: [String: String] = [:]

            let denied = try await runBaton(["launch", device, "private:film"] + data("app.ran") + anonymous, xdg: other.home.path)
            outputs["launch private"] = denied.description
            #expect(denied.code == 77, "\(denied)")
            #expect(denied.stdout.hasPrefix("denied_by_remote_system: "), "\(denied)")
            #expect(denied.stdout.contains("takes private: URIs from other accounts"), "\(denied)")
            let json = try await runBaton(["launch", device, "door:x", "--json"] + data("handler.ran") + anonymous, xdg: other.home.path)
            outputs["launch door --json"] = json.description
            #expect(json.code == 77, "\(json)")
            #expect(json.json()?["status"] == .string("denied_by_remote_system"))

            let send = try await runBaton(["send", device, "peek", "--app", F.privateApp, "out=\(agent.directory.file("peek.ran"))"] + anonymous, xdg: other.home.path)
            outputs["send peek"] = send.description
            #expect(send.code == 77, "\(send)")
            #expect(send.stderr.contains("not_authorized"), "\(send)")
            #expect(send.stdout.isEmpty)

            let describe = try await runBaton(["describe", device, "--json"] + anonymous, xdg: other.home.path)
            outputs["describe"] = describe.description
            #expect(describe.code == 0, "\(describe)")
            #expect(describe.json()?["apps"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [F.publicApp])

            let served = try await runBaton(["launch", device, "public:x"] + data("public.ran") + anonymous, xdg: other.home.path)
            outputs["launch public"] = served.description
            #expect(served.code == 0, "\(served)")
            #expect(agent.directory.read("public.ran") == "ran")
            let echo = try await runBaton(["send", device, "echo", "--app", F.publicApp, "k=v"] + anonymous, xdg: other.home.path)
            outputs["send echo"] = echo.description
            #expect(echo.code == 0, "\(echo)")
            #expect(echo.stdout == "k: v\n")

            for file in ["app.ran", "handler.ran", "peek.ran"] {
                #expect(agent.directory.read(file) == nil, "\(file) was written: it ran for a stranger")
            }
            outputs["agent log"] = agent.log
            expectNoSecrets(in: outputs, keysIn: [other.folder.path, TestAccount.shared.folder.path, F.folder(of: agent).path])
        }
    }

    @Test("without --authorization anonymous, a client refuses another account's agent: denied_by_local_system naming another account")
    func clientRefusesAnotherAccountsAgent() async throws {
        let other = try TestAccount()
        try await withAgent(F.config) { agent in
            let device = agent.address.description
            let cli = try await runBaton(["launch", device, "public:x"], xdg: other.home.path)
            #expect(cli.code == 77, "\(cli)")
            #expect(cli.stdout.hasPrefix("denied_by_local_system: "), "\(cli)")
            #expect(cli.stdout.contains("another account"), "\(cli)")

            let client = makeClient(security: other.security)
            defer { client.shutdown() }
            let (status, detail) = await client.launch(LaunchRequest(uri: "public:x"), on: agent.address)
            #expect(status == .deniedByLocalSystem, "\(detail)")
            #expect(detail.contains("the agent's certificate belongs to another account"), "\(detail)")
            let (channel, openStatus, _) = await client.openService("echo", app: F.publicApp, on: agent.address)
            #expect(channel == nil)
            #expect(openStatus == .notAuthorized)

            // The agent saw a caller that would not go on, and serves its own account still.
            let logged = await eventually { agent.log.contains("the caller refused this agent's certificate") }
            #expect(logged, "the agent's log:\n\(agent.log)")
            let own = makeClient()
            defer { own.shutdown() }
            #expect(await own.launch(LaunchRequest(uri: "public:after"), on: agent.address).0 == .success)
            expectNoSecrets(in: ["launch": cli.description, "agent log": agent.log], keysIn: [other.folder.path, F.folder(of: agent).path])
        }
    }

    @Test("this account's client refuses an agent of another account: denied_by_local_system")
    func ownClientRefusesAStrangersAgent() async throws {
        try await withAgent(F.config, account: nil) { stranger in
            let client = makeClient()
            defer { client.shutdown() }
            let (status, detail) = await client.launch(LaunchRequest(uri: "public:x"), on: stranger.address)
            #expect(status == .deniedByLocalSystem, "\(detail)")
            #expect(detail.contains("another account"), "\(detail)")
        }
    }

    @Test("a plaintext client (--insecure) meets a TLS agent: both sides say so, and the agent serves on; a TLS client meets an --insecure agent: the client says so")
    func plaintextMeetsTLS() async throws {
        try await withAgent(F.config) { agent in
            let plaintext = try await runBaton(["launch", agent.address.description, "public:x", "--insecure"])
            #expect(plaintext.code == 77, "\(plaintext)")
            #expect(plaintext.stdout.contains("speaks TLS"), "\(plaintext)")
            let logged = await eventually { agent.log.contains("not a TLS client") }
            #expect(logged, "the agent's log:\n\(agent.log)")
            let good = try await runBaton(["launch", agent.address.description, "private:after"])
            #expect(good.code == 0, "\(good)")
        }
        try await withAgent(F.config, arguments: ["--insecure"]) { agent in
            let tls = try await runBaton(["launch", agent.address.description, "public:x"])
            #expect(tls.code == 77, "\(tls)")
            #expect(tls.stdout.contains("the agent does not speak TLS"), "\(tls)")
            let good = try await runBaton(["launch", agent.address.description, "private:after", "--insecure"])
            #expect(good.code == 0, "\(good)")
        }
    }

    @Test("an expired certificate of the account is refused: denied_by_remote_system, the agent logs why, and serves on")
    func expiredCertificate() async throws {
        let account = try TestAccount()
        let expired = try account.expiredDevice(named: "old phone")
        let agent = try await AgentProcess.start(config: F.config, account: account)
        let client = makeClient(security: expired.security)
        defer { client.shutdown() }
        let mark = agent.directory.file("expired.ran")
        let (status, detail) = await client.launch(LaunchRequest(uri: "public:x", data: ["out": .string(mark)]), on: agent.address)
        #expect(status == .deniedByRemoteSystem, "\(detail)")
        #expect(detail.contains("the agent refused this device's certificate"), "\(detail)")
        let logged = await eventually { agent.log.contains("refused a caller") && agent.log.contains("expired") }
        #expect(logged, "the agent's log:\n\(agent.log)")
        #expect(agent.directory.read("expired.ran") == nil)

        let good = makeClient(account: account)
        defer { good.shutdown() }
        #expect(await good.launch(LaunchRequest(uri: "public:after"), on: agent.address).0 == .success)
        #expect(await agent.stop() == 0, "\(agent.log)")
        expectNoSecrets(in: ["agent log": agent.log], keysIn: [account.folder.path, expired.folder.path, F.folder(of: agent).path])
    }

    @Test("an agent that is not the device expected: denied_by_local_system naming both devices, and the agent serves on")
    func wrongDeviceID() async throws {
        try await withAgent(F.config) { agent in
            let expected = UUID().uuidString.lowercased()
            let client = makeClient()
            defer { client.shutdown() }
            let wrong = DeviceTarget(deviceID: expected, routes: [.tcp(agent.address)])
            let (status, detail) = try await client.launch(LaunchRequest(uri: "public:x"), on: wrong).get()
            #expect(status == .deniedByLocalSystem, "\(detail)")
            #expect(detail.contains("the agent presented device \(agent.id), not the expected \(expected)"), "\(detail)")
            let logged = await eventually { agent.log.contains("the caller refused this agent's certificate") }
            #expect(logged, "the agent's log:\n\(agent.log)")

            // The right id, or none, is served.
            let right = DeviceTarget(deviceID: agent.id.uppercased(), routes: [.tcp(agent.address)])
            #expect(try await client.launch(LaunchRequest(uri: "public:y"), on: right).get().0 == .success)
            let other = makeClient()
            defer { other.shutdown() }
            #expect(await other.launch(LaunchRequest(uri: "public:z"), on: agent.address).0 == .success)
        }
    }

    @Test("revocation spreads: an agent serves a revoked device until a device with the list meets it, then refuses it")
    func revocationSpreads() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "lost phone")
        let tablet = try account.device(named: "tablet")
        // Both agents start before the revocation: their folders have no list.
        let first = try await AgentProcess.start(config: F.config, account: account)
        let second = try await AgentProcess.start(config: F.config, account: account)
        var outputs: [String: String] = [:]
        func run(_ name: String, _ arguments: [String], as device: String) async throws -> CLIResult {
            let result = try await runBaton(arguments, xdg: device)
            outputs[name] = result.description
            return result
        }
        let firstList = AccountFixtures.folder(of: first).file("revocations.json")
        let secondList = AccountFixtures.folder(of: second).file("revocations.json")

        let before = try await run("phone before", ["launch", first.address.description, "private:before"], as: phone.home.path)
        #expect(before.code == 0, "\(before)")
        // A connection the phone holds open across the revocation.
        let phoneClient = makeClient(security: phone.security)
        defer { phoneClient.shutdown() }
        let (channel, openStatus, openDetail) = await phoneClient.openService("peek", app: F.privateApp, on: first.address)
        let held = try #require(channel, "\(openStatus): \(openDetail)")

        // Not pushed: this test follows the list from device to device.
        let revoked = try await run("revoke", ["account", "revoke", "lost phone", "--no-push"], as: account.home.path)
        #expect(revoked.code == 0, "\(revoked)")
        #expect(revoked.stdout == "revoked lost phone (\(phone.id)); revocation list version 1\n")

        // No one has told the agents yet.
        let unaware = try await run("phone unaware", ["launch", first.address.description, "private:unaware"], as: phone.home.path)
        #expect(unaware.code == 0, "\(unaware)")
        #expect(!FileManager.default.fileExists(atPath: firstList))

        // The holder's client meets the first agent: its Hello carries the list.
        let met = try await run("holder meets first", ["describe", first.address.description], as: account.home.path)
        #expect(met.code == 0, "\(met)")
        #expect(first.log.contains("adopted a newer revocation list"), "\(first.log)")
        #expect(FileManager.default.fileExists(atPath: firstList), "the first agent did not keep the list")
        #expect((try? String(contentsOfFile: firstList, encoding: .utf8)) == (try account.folder.read("revocations.json")))

        // The phone's open connection is dropped, and a new one refused.
        let dropped = await eventually { held.closedStatus != nil }
        #expect(dropped, "the revoked phone's connection stayed open")
        #expect(first.log.contains("dropping a revoked caller") && first.log.contains(phone.id), "\(first.log)")
        let refused = try await run("phone refused", ["launch", first.address.description, "public:refused"], as: phone.home.path)
        #expect(refused.code == 77, "\(refused)")
        #expect(refused.stdout.hasPrefix("denied_by_remote_system: "), "\(refused)")
        #expect(refused.stdout.contains("the agent refused this device's certificate"), "\(refused)")
        let inProcess = await phoneClient.launch(LaunchRequest(uri: "public:again"), on: first.address)
        #expect(inProcess.0 == .deniedByRemoteSystem, "\(inProcess.1)")
        let logged = await eventually { first.log.contains("refused a caller") && first.log.contains("device ID \(phone.id) is revoked") }
        #expect(logged, "\(first.log)")

        // The second agent still serves the phone, until a device that has the list (the
        // tablet, which got it from the first agent's HelloAck) meets it.
        let stillServed = try await run("phone at second", ["launch", second.address.description, "private:second"], as: phone.home.path)
        #expect(stillServed.code == 0, "\(stillServed)")
        let tabletFirst = try await run("tablet meets first", ["describe", first.address.description], as: tablet.home.path)
        #expect(tabletFirst.code == 0, "\(tabletFirst)")
        #expect(FileManager.default.fileExists(atPath: tablet.folder.file("revocations.json")), "the tablet did not take the list from the agent")
        let tabletSecond = try await run("tablet meets second", ["describe", second.address.description], as: tablet.home.path)
        #expect(tabletSecond.code == 0, "\(tabletSecond)")
        #expect(FileManager.default.fileExists(atPath: secondList), "the second agent did not keep the list")
        let refusedSecond = try await run("phone refused at second", ["launch", second.address.description, "public:x"], as: phone.home.path)
        #expect(refusedSecond.code == 77, "\(refusedSecond)")
        #expect(refusedSecond.stdout.contains("the agent refused this device's certificate"), "\(refusedSecond)")

        // Both serve the account's other devices on.
        for agent in [first, second] {
            let good = try await run("tablet after \(agent.address)", ["launch", agent.address.description, "private:after"], as: tablet.home.path)
            #expect(good.code == 0, "\(good)")
        }
        #expect(await first.stop() == 0, "\(first.log)")
        #expect(await second.stop() == 0, "\(second.log)")
        outputs["first agent log"] = first.log
        outputs["second agent log"] = second.log
        expectNoSecrets(in: outputs, keysIn: [account.folder.path, phone.folder.path, tablet.folder.path,
                                              AccountFixtures.folder(of: first).path, AccountFixtures.folder(of: second).path])
    }

    @Test("an agent whose folder holds the list refuses the revoked device from its first connection")
    func revokedBeforeStart() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "lost phone")
        let revoked = try await runBaton(["account", "revoke", phone.id], xdg: account.home.path)
        #expect(revoked.code == 0, "\(revoked)")
        let directory = try TemporaryDirectory()
        try account.enrol(xdg: directory.path + "/xdg", name: "tv")
        try account.passRevocationList(to: directory.path + "/xdg")
        let agent = try await AgentProcess.start(config: F.config, directory: directory, account: account)

        let refused = try await runBaton(["launch", agent.address.description, "public:x"], xdg: phone.home.path)
        #expect(refused.code == 77, "\(refused)")
        #expect(refused.stdout.hasPrefix("denied_by_remote_system: "), "\(refused)")
        #expect(refused.stdout.contains("the agent refused this device's certificate"), "\(refused)")
        let logged = await eventually { agent.log.contains("device ID \(phone.id) is revoked") }
        #expect(logged, "\(agent.log)")

        let good = try await runBaton(["launch", agent.address.description, "private:x"], xdg: account.home.path)
        #expect(good.code == 0, "\(good)")
        #expect(await agent.stop() == 0, "\(agent.log)")
        expectNoSecrets(in: ["revoke": revoked.description, "refused": refused.description, "good": good.description, "agent log": agent.log],
                        keysIn: [account.folder.path, phone.folder.path, directory.path + "/xdg/baton"])
    }

    @Test("a device revoked on the agent's own device loses the connection it holds open, and cannot connect again")
    func revokedWhereTheAgentRuns() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "lost phone")
        // The agent runs on the holder's own folder, where `baton account revoke` writes the list.
        let agent = try await AgentProcess.start(config: F.config, home: account.home.path)
        let phoneClient = makeClient(security: phone.security)
        defer { phoneClient.shutdown() }
        let (channel, openStatus, openDetail) = await phoneClient.openService("peek", app: F.privateApp, on: agent.address)
        let held = try #require(channel, "\(openStatus): \(openDetail)")

        let revoked = try await runBaton(["account", "revoke", "lost phone"], xdg: account.home.path)
        #expect(revoked.code == 0, "\(revoked)")
        let dropped = await eventually { held.closedStatus != nil }
        #expect(dropped, "the revoked phone's open connection is still served; the agent's log:\n\(agent.log)")
        let peeked = await held.send(["out": .string(agent.directory.file("peeked"))])
        #expect(peeked.status != .success, "\(peeked)")
        #expect(agent.directory.read("peeked") == nil, "the provider ran for a revoked device")
        let again = await phoneClient.launch(LaunchRequest(uri: "public:again"), on: agent.address)
        #expect(again.0 == .deniedByRemoteSystem, "\(again.1)")
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    @Test("a revocation list changed after signing, or another account's, sent in Hello: the agent says goodbye, logs it, keeps its own list and serves on")
    func tamperedRevocationList() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "phone")
        let tamperer = try account.device(named: "tamperer")
        let oldTV = try TemporaryDirectory()
        let oldTVID = try account.enrol(xdg: oldTV.path, name: "old tv")
        _ = try account.credentials.revoke("old tv", in: account.folder)
        let signed = try #require(try account.folder.read("revocations.json"))
        let outer = try JSON.parse(signed)
        let payload = try #require(outer["list"]?.stringValue)
        let signature = try #require(outer["signature"])
        // The same signature over a list that revokes the phone instead of the old TV.
        let changed = payload.replacingOccurrences(of: oldTVID, with: phone.id)
        #expect(changed != payload)
        let tampered = JSON.object([.init("list", .string(changed)), .init("signature", signature)]).serialized()
        // A list another account signed.
        let other = try TestAccount()
        let foreignDevice = try TemporaryDirectory()
        try other.enrol(xdg: foreignDevice.path, name: "someone's")
        _ = try other.credentials.revoke("someone's", in: other.folder)
        let foreign = try #require(try other.folder.read("revocations.json"))

        let agent = try await AgentProcess.start(config: F.config, account: account)
        let agentList = AccountFixtures.folder(of: agent).file("revocations.json")
        for (list, reason) in [(tampered, "signature does not check out"), (foreign, "signature does not check out")] {
            let hello = Hello(deviceName: "tamperer", revocationList: list)
            let connecting = PeerConnector.connect(
                host: agent.address.host, port: agent.address.port, on: clientGroup.next(), security: tamperer.security,
                hello: hello, connectTimeout: .seconds(20), logger: Logger(label: "tamperer"))
            // Deadlines, not measures: a loaded machine can take seconds over a handshake.
            let outcome = try #require(await result(of: connecting, within: 30), "no answer to a Hello with a bad list")
            switch outcome {
            case .success(let connection):
                connection.eventLoop.execute { connection.goodbye(.unknown, "done") }
                Issue.record("the agent took a Hello with a bad revocation list")
            case .failure(let error):
                #expect("\(error)".contains("refused the revocation list you sent"), "\(error)")
                #expect("\(error)".contains(reason), "\(error)")
            }
            #expect(agent.log.contains("refused a caller's revocation list"), "\(agent.log)")
            #expect(!FileManager.default.fileExists(atPath: agentList), "the agent kept a bad list")
            // The tamperer itself is served on a connection without the list.
            let client = makeClient(security: tamperer.security)
            #expect(await client.launch(LaunchRequest(uri: "public:after"), on: agent.address).0 == .success)
            client.shutdown()
        }
        // The phone, which the tampered list would have revoked, is served.
        let served = try await runBaton(["launch", agent.address.description, "private:x"], xdg: phone.home.path)
        #expect(served.code == 0, "\(served)")
        #expect(await agent.stop() == 0, "\(agent.log)")
        expectNoSecrets(in: ["agent log": agent.log], keysIn: [account.folder.path, tamperer.folder.path, AccountFixtures.folder(of: agent).path])
    }
}
