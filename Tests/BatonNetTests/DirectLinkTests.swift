import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Relay first, then direct: a device found only through the broker (both sides
/// `--no-mdns`, a real mosquitto in namespace `a`) is reached through it, and the endpoints
/// its presence advertises are tried in the background over mutual TLS. Seen the way a user
/// sees it: the agent's log says how each launch came (`peer`: `broker:ID`, or the caller's
/// address), the client's log says what it did.
@Suite("Direct link after the broker", .serialized)
struct DirectLinkTests {
    static func tag() -> String { String(UUID().uuidString.prefix(6)).lowercased() }

    @Test func aDeviceFoundOnlyOnTheBrokerIsReachedThereFirstThenOverADirectLink() async throws {
        try await NamespacePair.with { pair in
            let broker = try await DirectLinkBroker.start(in: pair.a, of: pair)
            let name = "Flat Speaker \(Self.tag())"
            let speaker = try await pair.agent(
                in: pair.a, config: MDNSFixtures.config(name: name, kind: "speaker"),
                arguments: ["--no-mdns", "--broker", broker.url, "--verbose"])
            try await Self.waitListed(speaker.id, on: broker, from: pair)
            let mark = speaker.log.count

            let script = """
                local dev = baton.find("\(name)", {required = true})
                for i = 1, 16 do
                  baton.check(baton.launch(dev, "media:" .. i, {app = "\(MDNSFixtures.player)"}))
                  baton.sleep(0.5)
                end
                """
            let run = try await pair.baton(
                in: pair.b, ["run", "--no-mdns", "--broker", broker.url, "--verbose", "--log-format", "json", "-e", script])
            #expect(run.code == 0, "\(run)")

            let served = Self.served(String(speaker.log.dropFirst(mark)))
            let launches = served.filter { $0.message == "launched" }
            #expect(launches.count == 16, "\(speaker.log)")
            // Reached through the broker (to describe itself, for the name, at least).
            #expect(served.contains { $0.message == "client connected" && $0.peer.hasPrefix("broker:") }, "\(speaker.log)")
            // Then over TCP from the other namespace, and from then on only so.
            let direct = launches.firstIndex { $0.peer.contains(pair.address(of: pair.b)) }
            #expect(direct != nil, "no launch arrived over a direct link:\n\(speaker.log)\n\(run)")
            if let direct {
                #expect(launches[direct...].allSatisfy { $0.peer.contains(pair.address(of: pair.b)) }, "\(speaker.log)")
            }
            #expect(launches.last?.peer.contains(pair.address(of: pair.b)) == true, "\(speaker.log)")
            // The client says it tried once the broker had answered, where it went, and that
            // it let the broker's connection go once idle.
            let said = Self.lines(run.stderr).compactMap { $0["message"]?.stringValue }
            let trying = said.firstIndex(of: "trying a direct link"), movedAt = said.firstIndex(of: "moved to a direct link")
            #expect(trying != nil && movedAt != nil && trying! < movedAt!, "\(run)")
            let moved = Self.lines(run.stderr).first { $0["message"] == .string("moved to a direct link") }
            #expect(moved?["at"]?.stringValue == "\(speaker.host):\(speaker.port)", "\(run)")
            #expect(Self.lines(run.stderr).contains { $0["message"] == .string("closing the relayed connection: a direct link replaced it") }, "\(run)")
            #expect(await speaker.stop(SIGTERM) == 0, "\(speaker.log)")
        }
    }

    @Test func whenTheDirectLinkBreaksTheNextLaunchGoesThroughTheBroker() async throws {
        try await NamespacePair.with { pair in
            let broker = try await DirectLinkBroker.start(in: pair.a, of: pair)
            let name = "Holiday Flat TV \(Self.tag())"
            let tv = try await pair.agent(
                in: pair.a, config: MDNSFixtures.config(name: name, kind: "tv"), arguments: ["--no-mdns", "--broker", broker.url])
            try await Self.waitListed(tv.id, on: broker, from: pair)
            let mark = tv.log.count
            let cut = pair.directory.file("cut")

            // Launches until the test has cut the direct link (one in flight then may fail:
            // the link broke under it), then one more, which must succeed.
            let script = """
                local dev = baton.find("\(name)", {required = true})
                local i = 0
                repeat
                  i = i + 1
                  baton.launch(dev, "media:" .. i, {app = "\(MDNSFixtures.player)"})
                  baton.sleep(0.3)
                until io.open("\(cut)") or i == 200
                baton.check(baton.launch(dev, "media:after", {app = "\(MDNSFixtures.player)"}))
                print("after the cut: success")
                """
            let run = try DirectLinkScript.start(in: pair.b, of: pair, broker: broker, script: script)
            let direct = await eventually(within: 30) {
                Self.served(String(tv.log.dropFirst(mark))).contains { $0.message == "launched" && $0.peer.contains(pair.address(of: pair.b)) }
                    || !run.process.isRunning
            }
            #expect(direct && run.process.isRunning, "no launch arrived over a direct link:\n\(tv.log)\n\(run.transcript)")
            // The client's TCP connection to the agent, gone as a pulled cable or a NAT that
            // forgot it would take it.
            try NamespacePair.command(
                NamespacePair.ip, "netns", "exec", pair.b, "ss", "-K", "dst", tv.host, "dport", "=", "\(tv.port)")
            try Data().write(to: URL(fileURLWithPath: cut))
            let code = await run.process.exit.wait(within: 30)
            if code == nil { run.process.signal(SIGKILL) }
            #expect(code == 0, "\(run.transcript)")
            #expect(run.output.contains("after the cut: success"), "\(run.transcript)")

            let after = Self.served(String(tv.log.dropFirst(mark))).last { $0.message == "launched" }
            #expect(after?.uri == "media:after" && after?.peer.hasPrefix("broker:") == true, "\(tv.log)")
            #expect(Self.lines(run.log).contains { $0["message"] == .string("the direct link closed, back to the broker") }, "\(run.transcript)")
            #expect(await tv.stop(SIGTERM) == 0, "\(tv.log)")
        }
    }

    @Test func aDeviceWhoseAdvertisedAddressNobodyElseReachesIsServedThroughTheBroker() async throws {
        try await NamespacePair.with { pair in
            let broker = try await DirectLinkBroker.start(in: pair.a, of: pair)
            // The agent listens on an address of its own host alone; from `b` it leads to a
            // gateway that never answers, as the LAN address of another network would.
            try NamespacePair.command(NamespacePair.ip, "-n", pair.a, "addr", "add", "10.88.0.1/32", "dev", "lo")
            try NamespacePair.command(NamespacePair.ip, "-n", pair.b, "route", "add", "10.88.0.0/24", "via", "10.77.0.9")
            let name = "Office Laptop \(Self.tag())"
            let laptop = try await DirectLinkAgent.start(
                in: pair.a, of: pair, listen: "10.88.0.1", config: MDNSFixtures.config(name: name, kind: "laptop"), broker: broker)
            try await Self.waitListed(laptop.id, on: broker, from: pair)
            let mark = laptop.log.count

            let script = """
                local dev = baton.find("\(name)", {required = true})
                for i = 1, 6 do
                  baton.check(baton.launch(dev, "media:" .. i, {app = "\(MDNSFixtures.player)"}))
                  baton.sleep(1)
                end
                """
            let run = try await pair.baton(
                in: pair.b, ["run", "--no-mdns", "--broker", broker.url, "--verbose", "--log-format", "json", "-e", script])
            #expect(run.code == 0, "\(run)")
            let launches = Self.served(String(laptop.log.dropFirst(mark))).filter { $0.message == "launched" }
            #expect(launches.count == 6 && launches.allSatisfy { $0.peer.hasPrefix("broker:") }, "\(laptop.log)")
            let failed = Self.lines(run.stderr).first { $0["message"] == .string("direct link failed, staying on the broker") }
            #expect(failed?["error"]?.stringValue?.contains("10.88.0.1:\(laptop.port)") == true, "\(run)")
            #expect(!Self.lines(run.stderr).contains { $0["message"] == .string("moved to a direct link") }, "\(run)")
            #expect(await laptop.stop() == 0, "\(laptop.log)")
        }
    }

    // MARK: helpers

    /// Waits until `baton devices` in `b`, through the broker alone, lists the device `id`.
    static func waitListed(_ id: String, on broker: DirectLinkBroker, from pair: NamespacePair) async throws {
        let listed = try await MDNSFixtures.devices(pair, in: pair.b, ["--no-mdns", "--broker", broker.url], expecting: [id])
        #expect(listed[id]?["transport"]?.stringValue == "cloud", "\(listed)")
    }

    /// What an agent served, from its JSON log: each line's message, `peer` and `uri`.
    static func served(_ log: String) -> [(message: String, peer: String, uri: String)] {
        lines(log).compactMap { line in
            guard let peer = line["peer"]?.stringValue, let message = line["message"]?.stringValue else { return nil }
            return (message, peer, line["uri"]?.stringValue ?? "")
        }
    }

    /// The JSON lines of a log.
    static func lines(_ log: String) -> [JSON] {
        log.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
    }
}

/// A mosquitto in a namespace, on its veth address, port 1883: plaintext, anonymous (the
/// link is sealed end to end whatever the broker).
struct DirectLinkBroker {
    let url: String
    let process: ChildProcess

    static func start(in namespace: String, of pair: NamespacePair) async throws -> DirectLinkBroker {
        let address = pair.address(of: namespace)
        let config = pair.directory.file("mosquitto.conf"), log = pair.directory.file("mosquitto.log")
        try """
            user root
            persistence false
            log_dest stderr
            log_type all
            listener 1883 \(address)
            allow_anonymous true
            set_tcp_nodelay true

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = try pair.spawn(in: namespace, "/usr/sbin/mosquitto", ["-c", config], stdout: log, stderr: log)
        let running = await eventually(within: 10) {
            NamespacedAgent.read(log).contains(" running") || !process.isRunning
        }
        guard running, process.isRunning else {
            throw NamespacePair.Failure("mosquitto did not start in \(namespace):\n\(NamespacedAgent.read(log))")
        }
        return DirectLinkBroker(url: "mqtt://\(address):1883", process: process)
    }
}

/// `baton agent` listening on one address of its namespace (not the wildcard, so that it
/// advertises that address alone), on the broker, without mDNS.
final class DirectLinkAgent: Sendable {
    let id: String
    let port: Int
    let process: ChildProcess
    private let stdout: String
    private let stderr: String

    private init(id: String, port: Int, process: ChildProcess, stdout: String, stderr: String) {
        self.id = id
        self.port = port
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Its log (JSON lines) so far.
    var log: String { NamespacedAgent.read(stderr) }

    static func start(
        in namespace: String, of pair: NamespacePair, listen host: String, config: String, broker: DirectLinkBroker
    ) async throws -> DirectLinkAgent {
        let home = try AgentHome(in: pair.directory)
        let file = home.path + "/agent.lua"
        try Data(config.replacingOccurrences(of: "@DIR@", with: home.path).utf8).write(to: URL(fileURLWithPath: file))
        let stdout = home.path + "/agent.out", stderr = home.path + "/agent.err"
        let process = try pair.spawn(
            in: namespace, try BatonBinary.get().path,
            ["agent", "--listen", "\(host):0", "--log-format", "json", "--config", file, "--no-mdns", "--broker", broker.url],
            environment: ["XDG_CONFIG_HOME": home.path + "/xdg"], stdout: stdout, stderr: stderr)
        var found: (port: Int, id: String)?
        _ = await eventually(within: 20) {
            let first = NamespacedAgent.read(stdout).split(separator: "\n").first.map(String.init) ?? ""
            if let m = first.wholeMatch(of: #/listening on [0-9.]+:([0-9]+) id=(\S+) name=".*"/#), let port = Int(m.1) {
                found = (port, String(m.2))
            }
            return found != nil || !process.isRunning
        }
        guard let found else {
            process.signal(SIGKILL)
            throw NamespacePair.Failure("the agent did not say it listens:\n\(NamespacedAgent.read(stdout))\(NamespacedAgent.read(stderr))")
        }
        return DirectLinkAgent(id: found.id, port: found.port, process: process, stdout: stdout, stderr: stderr)
    }

    /// SIGTERM, and its exit code (nil if it did not end within 15 s).
    func stop() async -> Int32? {
        process.signal(SIGTERM)
        return await process.exit.wait(within: 15)
    }
}

/// `baton run` started in a namespace and left running, as the holder of the shared account.
struct DirectLinkScript {
    let process: ChildProcess
    let stdout: String
    let stderr: String

    static func start(in namespace: String, of pair: NamespacePair, broker: DirectLinkBroker, script: String) throws -> DirectLinkScript {
        let tag = DirectLinkTests.tag()
        let stdout = pair.directory.file("run-\(tag).out"), stderr = pair.directory.file("run-\(tag).err")
        let process = try pair.spawn(
            in: namespace, try BatonBinary.get().path,
            ["run", "--no-mdns", "--broker", broker.url, "--verbose", "--log-format", "json", "-e", script],
            environment: ["XDG_CONFIG_HOME": TestAccount.shared.home.path], stdout: stdout, stderr: stderr)
        return DirectLinkScript(process: process, stdout: stdout, stderr: stderr)
    }

    var output: String { NamespacedAgent.read(stdout) }
    var log: String { NamespacedAgent.read(stderr) }
    var transcript: String { "--- stdout ---\n\(output)--- stderr ---\n\(log)---" }
}
