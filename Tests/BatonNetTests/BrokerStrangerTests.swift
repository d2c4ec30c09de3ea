import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A device of another account on the same plain mosquitto (one that lets anyone read and
/// write anything): it is never listed by the account's devices, reaches nothing of ours, and
/// its signed presence copied onto the account's topics is ignored.
@Suite("Broker stranger", .timeLimit(.minutes(2)))
struct BrokerStrangerTests {
    /// A private app (not anonymous) whose launch writes `@DIR@/ran`.
    static let config = """
        app{ id = "org.test.private", name = "Private", schemes = { "private" },
             launch = function(uri, data)
               local f = assert(io.open("@DIR@/ran", "w"))
               f:write(uri)
               f:close()
             end }
        """

    static let ignoredPresence = "ignored presence that is not this account's device's"

    @Test("a stranger's agent on our broker is never listed by our devices or watcher; its launch to our agent by id finds nothing (68) and nothing runs")
    func strangerIsNeverListedAndServedNothing() async throws {
        try await BrokerNetwork.with(devices: 3) { net in
            let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
            let via = ["--broker", broker.url]
            let ours = try await net.agent(
                in: net.a, name: "Ours \(NamespaceSpawner.tag())", config: Self.config, arguments: via + ["--no-mdns"])
            let strangerHome = try AgentHome(in: net.directory, account: nil)
            let strangerXDG = strangerHome.path + "/xdg"
            let stranger = try await net.agent(
                in: net.c, name: "Stranger \(NamespaceSpawner.tag())", arguments: via + ["--no-mdns"], home: strangerHome)

            // The stranger is on the broker: its presence is there, on its own account's topic.
            let capture = try await net.subscribe(to: broker, topic: "baton/v1/+/\(stranger.id)/presence")
            let presence = try await capture.waitFor("the stranger's presence") { !$0.payload.isEmpty }
            #expect(!presence.topic.contains(TestAccount.shared.fingerprint), "\(presence)")

            let watcher = try net.watcher(in: net.b, via)
            try await watcher.waitFor("our agent") { $0.event == "added" && $0.id == ours.id }
            let listed = try await net.baton(in: net.b, ["devices", "--json"] + via)
            #expect(listed.code == 0, "\(listed)")
            #expect(listed.stdout.contains(ours.id), "\(listed)")
            #expect(!listed.stdout.contains(stranger.id), "\(listed)")
            // Ours the other way round: the stranger, even asking for other accounts' devices, sees only its own.
            let theirs = try await net.baton(in: net.c, ["devices", "--json", "--authorization", "anonymous"] + via, xdg: strangerXDG)
            #expect(theirs.code == 0, "\(theirs)")
            #expect(!theirs.stdout.contains(ours.id), "\(theirs)")

            // Our id does not get the stranger anywhere: its broker access is its own account's
            // topics only, so no device has that id for it.
            let launch = try await net.baton(
                in: net.c, ["launch", ours.id, "private:from-a-stranger", "--authorization", "anonymous", "--json"] + via, xdg: strangerXDG)
            #expect(launch.code == 68, "\(launch)")
            #expect(launch.json()?["cause"]?.stringValue == "not_found", "\(launch)")
            #expect(ours.home.read("ran") == nil)
            #expect(!ours.log.contains("\"launched\""), "\(ours.log)")

            // Our own launch works: what keeps the stranger out is not a broken agent.
            let own = try await net.baton(in: net.b, ["launch", ours.id, "private:from-us"] + via)
            #expect(own.code == 0, "\(own)")
            #expect(ours.home.read("ran") == "private:from-us")
            #expect(!watcher.events().contains { $0.id == stranger.id }, "\(watcher.transcript)")
        }
    }

    @Test("the stranger's own signed presence republished on our account's topic (retained) is ignored and said once; our devices and watcher never list it")
    func strangersPresenceOnOurTopicIsIgnored() async throws {
        try await BrokerNetwork.with(devices: 3) { net in
            let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
            let via = ["--broker", broker.url]
            let ours = try await net.agent(in: net.a, name: "Ours \(NamespaceSpawner.tag())", arguments: via + ["--no-mdns"])
            let stranger = try await net.agent(
                in: net.c, name: "Stranger \(NamespaceSpawner.tag())", arguments: via + ["--no-mdns"],
                home: try AgentHome(in: net.directory, account: nil))
            let watcher = try net.watcher(in: net.b, via)
            try await watcher.waitFor("our agent") { $0.event == "added" && $0.id == ours.id }

            // Read off the broker, as anyone on a plain broker can, and put where our account's devices look.
            let capture = try await net.subscribe(to: broker, topic: "baton/v1/+/\(stranger.id)/presence")
            let presence = try await capture.waitFor("the stranger's presence") { !$0.payload.isEmpty }
            let forged = BrokerTopics(account: TestAccount.shared.fingerprint).presence(stranger.id)
            #expect(presence.topic != forged)
            let published = try await net.publish(in: net.c, to: broker, topic: forged, payload: presence.payload, retain: true)
            #expect(published.code == 0, "\(published)")

            // The live watcher heard it and said why it ignores it.
            #expect(await eventually(within: 20) { watcher.log.contains(Self.ignoredPresence) }, "\(watcher.transcript)")
            #expect(watcher.log.contains(forged), "\(watcher.transcript)")
            // A fresh listing gets it retained, ignores it too, and says so once.
            let listed = try await net.baton(in: net.b, ["devices", "--json"] + via)
            #expect(listed.code == 0, "\(listed)")
            #expect(listed.stdout.contains(ours.id), "\(listed)")
            #expect(!listed.stdout.contains(stranger.id), "\(listed)")
            #expect(listed.stderr.components(separatedBy: Self.ignoredPresence).count == 2, "\(listed)")
            #expect(!watcher.events().contains { $0.id == stranger.id }, "\(watcher.transcript)")
        }
    }
}
