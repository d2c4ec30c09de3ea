import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Devices on other networks, through a real mosquitto: an agent in namespace `a` and a client
/// in `b`, with no route between them but to the hub's broker (``BrokerNetwork``). What a user
/// sees: the device listed (`cloud`, its name learnt over the sealed link), launches and app
/// services that work, nothing readable on the broker, a killed agent removed and a restarted
/// broker removing nobody, forged presence and replayed requests ignored, and a device that left
/// failing at once.
@Suite("Broker link")
struct BrokerLinkTests {
    static let config = """
        device{ name = "Far TV", kind = "tv" }
        app{ id = "org.example.demo", schemes = {"demo"}, launch = function(uri) return "success" end,
             services = { echo = function(msg) return msg end } }
        """

    /// A plaintext mosquitto in the hub, and an agent of the shared account in `a` on it alone.
    static func farAgent(_ net: BrokerNetwork) async throws -> (MosquittoInstance, NamespacedAgent) {
        let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
        let agent = try await net.agent(in: net.a, config: config, arguments: ["--no-mdns", "--broker", broker.url])
        return (broker, agent)
    }

    /// `baton ARGS --no-mdns --broker URL` in `namespace` (b by default).
    static func baton(_ net: BrokerNetwork, in namespace: String? = nil, _ broker: MosquittoInstance, _ arguments: [String]) async throws -> CLIResult {
        try await net.baton(in: namespace ?? net.b, arguments + ["--no-mdns", "--broker", broker.url])
    }

    /// Waits until `baton devices --json` in b lists `agent` (its agent connects to the broker
    /// in the background); the device's JSON.
    static func listed(_ net: BrokerNetwork, _ broker: MosquittoInstance, _ agent: NamespacedAgent) async throws -> JSON? {
        var found: JSON?
        _ = try await eventually(within: 30) {
            let listing = try await baton(net, broker, ["devices", "--json"])
            found = listing.json()?.arrayValue?.first { $0["id"]?.stringValue == agent.id }
            return found != nil
        }
        return found
    }

    /// The URIs the agent logged as launched (its JSON log's `launched` lines).
    static func launches(_ agent: NamespacedAgent) -> [String] {
        agent.log.split(separator: "\n").compactMap { line in
            guard let object = try? JSON.parse(String(line)), object["message"]?.stringValue == "launched" else { return nil }
            return object["uri"]?.stringValue
        }
    }

    @Test("a device on another network is listed as cloud, launched on and served through the broker, and nothing readable crosses it")
    func reachedThroughTheBroker() async throws {
        try await BrokerNetwork.with { net in
            let (broker, agent) = try await Self.farAgent(net)
            let capture = try await net.subscribeAll(on: broker)
            let device = try #require(try await Self.listed(net, broker, agent), "b never listed the agent in a")
            #expect(device["transport"]?.stringValue == "cloud")
            #expect(device["name"]?.stringValue == "Far TV", "the name is learnt from the device over the sealed link")
            #expect(device["address"] == .null, "no TCP endpoint is a route from b")
            #expect(device["routes"]?.arrayValue?.first?["kind"]?.stringValue == "broker")

            let launched = try await Self.baton(net, broker, ["launch", "Far TV", "demo:secret-film-42"])
            #expect(launched.code == 0, "\(launched)")
            #expect(launched.stdout == "success\n")
            let sent = try await Self.baton(net, broker, ["send", agent.id, "echo", "--app", "org.example.demo", "text=hunter2"])
            #expect(sent.code == 0, "\(sent)")
            #expect(sent.stdout.contains("hunter2"), "the echo service answered through the broker")
            let described = try await Self.baton(net, broker, ["describe", "Far TV"])
            #expect(described.code == 0 && described.stdout.contains("org.example.demo"), "\(described)")
            #expect(Self.launches(agent) == ["demo:secret-film-42"])

            // Everything crossed the broker sealed: no URI, message, name or app in a payload.
            await capture.stop()
            #expect(!capture.captured().isEmpty, "the capture saw the traffic")
            for secret in ["secret-film-42", "hunter2", "Far TV", "org.example.demo", "echo"] {
                #expect(!capture.payloadsContain(secret), "\"\(secret)\" crossed the broker readable")
                #expect(!capture.topicsContain(secret))
            }
        }
    }

    @Test("a broker restart removes nobody and the device answers after it; kill -9 removes the device within its lease")
    func restartAndKill() async throws {
        try await BrokerNetwork.with { net in
            let (broker, agent) = try await Self.farAgent(net)
            _ = try #require(try await Self.listed(net, broker, agent))
            let watcher = try net.watcher(in: net.b, ["--no-mdns", "--broker", broker.url])
            try await watcher.waitFor("the agent added") { $0.event == "added" && $0.id == agent.id }

            // SIGTERM: mosquitto publishes every will (delayed or not) as it stops.
            try await broker.restart()
            var after: CLIResult?
            _ = try await eventually(within: 30) {
                after = try await Self.baton(net, broker, ["launch", agent.id, "demo:after-restart"])
                return after?.code == 0
            }
            #expect(after?.code == 0, "no launch through the restarted broker: \(after.map { "\($0)" } ?? "")")
            // Longer than a will takes to be believed (2 s on a connection that lasted 20 s).
            try await Task.sleep(for: .seconds(24))
            let removals = watcher.events().filter { $0.event == "removed" && $0.id == agent.id }
            #expect(removals.isEmpty, "the restart removed the device: \(watcher.transcript)")

            let mark = watcher.count
            await agent.stop(SIGKILL)
            // Its will (5 s after the broker notices), believed 2 s later; the lease (60 s) at most.
            try await watcher.waitFor("the killed agent removed", from: mark, within: 60) { $0.event == "removed" && $0.id == agent.id }
        }
    }

    @Test("presence not signed by the account's device for its topic is ignored: garbage, and a real presence moved to another id")
    func forgedPresence() async throws {
        try await BrokerNetwork.with { net in
            let (broker, agent) = try await Self.farAgent(net)
            let presence = try await net.subscribe(to: broker, topic: "baton/v1/+/+/presence")
            let real = try await presence.waitFor("the agent's presence") { $0.topic.hasSuffix("/\(agent.id)/presence") && !$0.payload.isEmpty }
            let root = String(real.topic.dropLast("\(agent.id)/presence".count))
            let moved = "0badc0de-0000-4000-8000-000000000001", garbage = "0badc0de-0000-4000-8000-000000000002"
            #expect(try await net.publish(to: broker, topic: root + moved + "/presence", payload: real.payload, retain: true).code == 0)
            #expect(try await net.publish(to: broker, topic: root + garbage + "/presence", payload: Array("BPR1 not really".utf8), retain: true).code == 0)

            let listed = try #require(try await Self.listed(net, broker, agent))
            #expect(listed["id"]?.stringValue == agent.id)
            let listing = try await Self.baton(net, broker, ["devices", "--json"])
            let ids = listing.json()?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            #expect(ids == [agent.id], "only the real device is listed: \(listing)")
            #expect(listing.stderr.contains("ignored presence"), "the forgery is logged: \(listing)")
        }
    }

    /// Finds the device, launches `demo:once`, holds its session 6 s, and says `done`.
    static let launchOnce = """
        local d = assert(baton.find("Far TV", {timeout = 20}))
        print(baton.launch(d, "demo:once"))
        baton.sleep(6)
        print("done")
        """

    @Test("requests read off the broker and published again are ignored: during the session and after it")
    func replayedRequests() async throws {
        try await BrokerNetwork.with { net in
            let (broker, agent) = try await Self.farAgent(net)
            _ = try #require(try await Self.listed(net, broker, agent))
            let capture = try await net.subscribeAll(on: broker)
            try net.directory.write("once.lua", Self.launchOnce)
            let script = net.directory.file("once.lua")
            let run = Task { try await net.baton(in: net.b, ["run", "--no-mdns", "--broker", broker.url, script]) }
            _ = await eventually(within: 30) { Self.launches(agent).contains("demo:once") }
            // What went to the agent's inbox so far: the hello and the sealed launch, and the
            // client's inbox they answer to.
            let toAgent = capture.captured().filter { $0.topic.hasSuffix("/\(agent.id)/in/agent") }
            let clientInbox = capture.captured().first { $0.topic.contains("/in/") && !$0.topic.hasSuffix("/in/agent") }?.topic
            #expect(!toAgent.isEmpty)
            for round in 0..<2 {
                for message in toAgent {
                    let response = clientInbox.map { ["-D", "publish", "response-topic", $0] } ?? []
                    _ = try await net.publish(to: broker, topic: message.topic, payload: message.payload, arguments: response)
                }
                // The second round after the script's session is over.
                if round == 0 { _ = try await run.value }
            }
            try await Task.sleep(for: .seconds(1))
            let result = try await run.value
            #expect(result.code == 0 && result.stdout.contains("success") && result.stdout.contains("done"), "\(result)")
            #expect(Self.launches(agent) == ["demo:once"], "a replay launched again: \(agent.log)")
        }
    }

    /// Finds the device, says so in the file arg[2], waits for the file arg[1], then launches
    /// and prints what it got.
    static let launchWhenTold = """
        local d = assert(baton.find("Far TV", {timeout = 20}))
        local said = assert(io.open(arg[2], "w")); said:write("found"); said:close()
        while not io.open(arg[1]) do baton.sleep(0.05) end
        print(baton.launch(d, "demo:late", {timeout = 20}))
        """

    @Test("a request to a device that left the broker fails at once as remote_system_unavailable, not at its deadline")
    func leftDevice() async throws {
        try await BrokerNetwork.with { net in
            let (broker, agent) = try await Self.farAgent(net)
            _ = try #require(try await Self.listed(net, broker, agent))
            try net.directory.write("late.lua", Self.launchWhenTold)
            let script = net.directory.file("late.lua"), go = net.directory.file("go"), found = net.directory.file("found")
            let run = Task { try await net.baton(in: net.b, ["run", "--no-mdns", "--broker", broker.url, script, go, found]) }
            _ = await eventually(within: 30) { NamespacedAgent.read(found).contains("found") }
            #expect(await agent.stop() == 0)
            _ = FileManager.default.createFile(atPath: go, contents: Data())
            let result = try await run.value
            #expect(result.stdout.hasPrefix("remote_system_unavailable"), "\(result)")
            // The broker said nobody listens (or presence said it left): not "timed out", not "no HelloAck".
            #expect(result.stdout.contains("is offline"), "\(result)")
        }
    }
}
