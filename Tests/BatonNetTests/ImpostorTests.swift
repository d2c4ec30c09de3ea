import BatonCore
import BatonSecurity
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A stranger on the LAN, in a namespace of its own, poses as the account's TV: its own
/// account's CA signs a certificate naming the TV's device id (public: it is in the TV's mDNS
/// TXT), and its agent advertises that id with its own account, before the TV is up so that its
/// sighting comes first. Nothing the account sends may reach it.
@Suite("A stranger posing as a device of the account", .timeLimit(.minutes(4)))
struct ImpostorTests {
    /// A home for an agent of a stranger's own account whose device id is `id`.
    static func impostorHome(in pair: NamespacePair, posingAs id: String) throws -> AgentHome {
        let home = try AgentHome(in: pair.directory, account: nil)
        let folder = home.path + "/xdg/baton"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data((id + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/device-id"))
        return home
    }

    @Test("an impostor advertising the TV's id with its own account receives no launch, by id, by name or from a saved table")
    func impostorGetsNothing() async throws {
        try await NamespacePair.with { pair in
            // The TV's id, as a stranger reads it off the network; the TV itself starts later.
            let tvHome = try AgentHome(in: pair.directory)
            let tvID = try ConfigurationFolder(path: tvHome.path + "/xdg/baton").deviceID()
            let impostor = try await pair.agent(
                in: pair.b, config: MDNSFixtures.config(name: "Impostor", kind: "tv"), home: try Self.impostorHome(in: pair, posingAs: tvID))
            #expect(impostor.id == tvID, "the impostor goes by the TV's id")
            try await MDNSFixtures.waitAdvertised([impostor])
            let tv = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv"), home: tvHome)
            try await MDNSFixtures.waitAdvertised([tv])

            // Listed once, with the TV's own address and the account's fingerprint.
            let listed = try await MDNSFixtures.devices(pair, in: pair.b, expecting: [tvID])
            let addresses = listed[tvID]?["addresses"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(addresses.first == tv.address && !addresses.contains { $0.hasPrefix(impostor.host) }, "\(listed[tvID]?.serialized() ?? "")")
            #expect(listed[tvID]?["account"] == .string(TestAccount.shared.fingerprint))
            #expect(listed[tvID]?["name"] == .string("Living Room TV"))

            for (n, device) in [tvID, "Living Room TV"].enumerated() {
                let launched = try await pair.baton(in: pair.b, ["launch", device, "media:\(n)", "--app", MDNSFixtures.player])
                #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            }
            #expect(tv.home.read("launched") == "media:0\nmedia:1\n")

            // A cron job's table saved while the impostor's sighting was merged: the impostor's
            // address and account. The TV's id is known as the account's own: refused.
            let impostorAccount = try #require(Self.account(of: impostor))
            let script = """
                local tv = { id = "\(tvID)", address = "\(impostor.address)", account = "\(impostorAccount)" }
                local status, detail = baton.launch(tv, "media:saved", { app = "\(MDNSFixtures.player)" })
                print(status)
                io.stderr:write(tostring(detail), "\\n")
                """
            let saved = try await pair.baton(in: pair.b, ["run", "-e", script])
            #expect(saved.stdout != "success\n", "\(saved)")
            #expect(saved.stderr.contains("is known as") || saved.stderr.contains("not this one") || saved.stderr.contains("refused"), "\(saved)")

            // A message with a secret, to the TV by id: never to the impostor.
            let messaged = try await pair.baton(in: pair.b, ["launch", tvID, "media:secret", "--app", MDNSFixtures.player])
            #expect(messaged.code == 0, "\(messaged)")
            #expect(tv.home.read("launched")?.hasSuffix("media:secret\n") == true)
            #expect(impostor.home.read("launched") == nil, "the impostor received \(impostor.home.read("launched") ?? "")")
            // Pinned: the holder knows the TV as its own.
            let known = try await pair.baton(in: pair.b, ["account", "known", "--json"])
            #expect(known.stdout.contains(tvID) && known.stdout.contains("\"own\":true"), "\(known)")
        }
    }

    @Test("the TV stopped, its impostor still cannot be reached under its id; the TV back, it is reached again")
    func impostorAloneIsRefused() async throws {
        try await NamespacePair.with { pair in
            let tv = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv"))
            try await MDNSFixtures.waitAdvertised([tv])
            let first = try await pair.baton(in: pair.b, ["launch", tv.id, "media:first", "--app", MDNSFixtures.player])
            #expect(first.code == 0, "\(first)")
            _ = await tv.stop()

            // The impostor alone, at the address a long-running script held.
            let impostor = try await pair.agent(
                in: pair.b, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv"), home: try Self.impostorHome(in: pair, posingAs: tv.id))
            try await MDNSFixtures.waitAdvertised([impostor])
            let byID = try await pair.baton(in: pair.b, ["launch", tv.id, "media:impostor", "--app", MDNSFixtures.player])
            #expect(byID.code != 0 && !byID.stdout.contains("success"), "\(byID)")
            let byName = try await pair.baton(in: pair.b, ["launch", "Living Room TV", "media:impostor", "--app", MDNSFixtures.player])
            #expect(byName.code != 0 && !byName.stdout.contains("success"), "\(byName)")
            #expect(impostor.home.read("launched") == nil, "the impostor received \(impostor.home.read("launched") ?? "")")

            // The TV back beside its impostor: reached by id and by name.
            let back = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv"), home: tv.home)
            try await MDNSFixtures.waitAdvertised([back])
            for device in [tv.id, "Living Room TV"] {
                let launched = try await pair.baton(in: pair.b, ["launch", device, "media:back", "--app", MDNSFixtures.player])
                #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            }
            #expect(impostor.home.read("launched") == nil, "the impostor received \(impostor.home.read("launched") ?? "")")
        }
    }

    @Test("a stranger holding the TV's name with the account's fingerprint copied: the name still reaches the TV, which takes its name back once the stranger goes")
    func nameHijack() async throws {
        try await NamespacePair.with { pair in
            // python-zeroconf answering as "Living Room TV": a random id, the account's
            // fingerprint copied from any agent's TXT, an address of the stranger's.
            let stranger = try pair.python(in: pair.b, MDNSInteropScripts.register, [
                "Living Room TV", pair.address(of: pair.b), "4999", "id=\(UUID().uuidString.lowercased())", "kind=tv",
                "platform=linux", "v=1", "acct=\(TestAccount.shared.fingerprint)",
            ])
            try await stranger.waitForLine("REGISTERED") { $0 == "REGISTERED" }
            let tv = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv"))
            try await MDNSFixtures.waitAdvertised([tv], as: ["Living Room TV (2)"])

            // The name reaches the device that proves it is the account's, not the one shouting it.
            let launched = try await pair.baton(in: pair.a, ["launch", "Living Room TV", "media:hijacked", "--app", MDNSFixtures.player])
            #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            #expect(tv.home.read("launched") == "media:hijacked\n")

            // The stranger goes (killed: no goodbye); the TV probes for its name again and takes it back.
            stranger.process.signal(SIGKILL)
            let back = await eventually(within: 30) { tv.log.contains("name free on the network again") }
            #expect(back, "the TV never took its name back; its log:\n\(tv.log)")
            let described = try await pair.baton(in: pair.b, ["describe", tv.id, "--json"])
            #expect((try? JSON.parse(described.stdout))?["device"]?["name"] == .string("Living Room TV"), "\(described)")
            let again = try await pair.baton(in: pair.b, ["launch", "Living Room TV", "media:back", "--app", MDNSFixtures.player])
            #expect(again.code == 0 && again.stdout == "success\n", "\(again)")
        }
    }

    /// The fingerprint of the account an agent made for itself.
    static func account(of agent: NamespacedAgent) -> String? {
        (try? DeviceCredentials.load(from: ConfigurationFolder(path: agent.home.path + "/xdg/baton")))??.fingerprint.hex
    }
}
