import BatonAgent
import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A handoff between real mpv players on two devices that reach each other only through a
/// mosquitto (namespaces with no route between them), driven by `baton handoff --broker` from a
/// third network, proven on the target player's own socket. Timing-sensitive (real players,
/// a handoff's proof readings): run it with the handoff phase.
@Suite("Broker handoff", .serialized, .timeLimit(.minutes(3)))
struct BrokerHandoffTests {
    /// An mpv player app whose socket is the agent home's `mpv.sock`.
    static let playerConfig = """
        app{ id = "\(playerApp)", name = "Player", schemes = {"file"},
             player = { backend = "mpv", socket = "@DIR@/mpv.sock", args = {"--ao=null", "--no-video"} } }
        """

    /// A connection to the mpv of `agent` (one started with ``playerConfig``), straight to its
    /// socket (a path: reachable from any network namespace), once it listens (20 s at most).
    static func mpv(of agent: NamespacedAgent) async throws -> MPVConnection {
        let socket = agent.home.path + "/mpv.sock"
        var connection: MPVConnection?
        _ = await eventually(within: 20) {
            connection = try? await MPVConnection.connect(path: socket, on: playerLoop).get()
            return connection != nil
        }
        guard let connection else { throw AgentFailure("the agent's mpv did not listen on \(socket); its log:\n\(agent.log)") }
        try await playerLoop.submit { connection.callTimeout = .seconds(20) }.get()
        return connection
    }

    /// A plain mosquitto, and a phone in a and a TV in b with mpv players, reachable through it
    /// alone (no mDNS); a watcher in c has seen both, as `cloud`. The `--broker` arguments too.
    static func phoneAndTV(on net: BrokerNetwork) async throws -> (phone: NamespacedAgent, tv: NamespacedAgent, via: [String]) {
        let broker = try await net.startMosquitto(config: BrokerNetwork.plainConfig)
        let via = ["--broker", broker.url]
        let phone = try await net.agent(
            in: net.a, name: "Phone \(NamespaceSpawner.tag())", kind: "phone", config: playerConfig, arguments: via + ["--no-mdns"])
        let tv = try await net.agent(
            in: net.b, name: "TV \(NamespaceSpawner.tag())", kind: "tv", config: playerConfig, arguments: via + ["--no-mdns"])
        let watcher = try net.watcher(in: net.c, via)
        for agent in [phone, tv] {
            let (_, added) = try await watcher.waitFor("\(agent.name) added") { $0.event == "added" && $0.id == agent.id }
            #expect(added["transport"] == "cloud", "\(added)")
        }
        return (phone, tv, via)
    }

    @Test("baton handoff --broker from a third network: the target's mpv plays the source's file from where it was, the source's is paused, the report says success")
    func handoffAcrossTheBroker() async throws {
        try await BrokerNetwork.with(devices: 3) { net in
            let media = try await Media.make()
            let (phone, tv, via) = try await Self.phoneAndTV(on: net)
            let phoneMPV = try await Self.mpv(of: phone), tvMPV = try await Self.mpv(of: tv)

            // The phone plays, told so over the broker too.
            let play = try await net.baton(in: net.c, [
                "send", phone.id, PlaybackCommand.service, "--app", playerApp,
                "--json", #"{"command": "play", "uri": "\#(media.sweep)", "position": 12.5}"#,
            ] + via)
            #expect(play.code == 0, "\(play)")
            #expect(await eventually(within: 20) {
                guard let state = try? await phoneMPV.state().get() else { return false }
                return state.uri == media.sweep && !state.paused && (state.position ?? 0) >= 12.5
            }, "the phone's mpv does not play the sweep")

            let result = try await net.baton(in: net.c, ["handoff", phone.id, tv.id, "--json", "--timeout", "25s"] + via)
            #expect(result.code == 0, "\(result)")
            let report = try #require(result.json(), "\(result)")
            #expect(report["status"]?.stringValue == "success", "\(result)")
            #expect(report["uri"]?.stringValue == media.sweep, "\(result)")

            // What each player says on its own socket.
            let source = try await phoneMPV.state().get(), target = try await tvMPV.state().get()
            #expect(source.paused)
            #expect(!target.paused)
            #expect(target.uri == media.sweep)
            let stoppedAt = try #require(source.position), playsAt = try #require(target.position)
            #expect(stoppedAt >= 12.5)
            #expect(playsAt >= stoppedAt - 0.25, "the target plays at \(playsAt), the source stopped at \(stoppedAt)")
            // As HandoffTests over TCP: the source's reading settles by tens of ms after its pause.
            #expect(abs((report["position_at_source"]?.doubleValue ?? 0) - stoppedAt) < 0.25, "\(result)")
            let error = try #require(report["position_error_ms"]?.doubleValue, "\(result)")
            #expect(abs(error) <= 250, "\(result)")

            phoneMPV.close()
            tvMPV.close()
        }
    }

    @Test("a baton run script finds both devices through the broker (by id, by name) and its baton.handoff moves the TV's paused sweep to the phone: the phone's mpv holds it paused at 20 s, the TV's stays paused")
    func scriptHandoffAcrossTheBroker() async throws {
        try await BrokerNetwork.with(devices: 3) { net in
            let media = try await Media.make()
            let (phone, tv, via) = try await Self.phoneAndTV(on: net)
            let phoneMPV = try await Self.mpv(of: phone), tvMPV = try await Self.mpv(of: tv)
            // The TV plays, paused at 20 s: a paused source gives a paused target at its position.
            let play = try await net.baton(in: net.c, [
                "send", tv.id, PlaybackCommand.service, "--app", playerApp,
                "--json", #"{"command": "play", "uri": "\#(media.sweep)", "position": 20, "paused": true}"#,
            ] + via)
            #expect(play.code == 0, "\(play)")
            #expect(await eventually(within: 20) { (try? await tvMPV.state().get())?.uri == media.sweep })

            let script = net.directory.file("handoff-\(NamespaceSpawner.tag()).lua")
            try Data("""
                local tv = baton.find("\(tv.id)", { required = true, timeout = 20 })
                local phone = baton.find("\(phone.name)", { required = true, timeout = 20 })
                local status, report = baton.handoff(tv, phone, { timeout = 25 })
                print("status=" .. status .. " paused=" .. tostring(report.paused))
                """.utf8).write(to: URL(fileURLWithPath: script))
            // Options before the script: what follows it is the script's own arguments.
            let run = try await net.baton(in: net.c, ["run"] + via + [script])
            #expect(run.code == 0, "\(run)")
            #expect(run.stdout.contains("status=success paused=true"), "\(run)")

            let target = try await phoneMPV.state().get()
            #expect(target.uri == media.sweep)
            #expect(target.paused)
            #expect(abs((target.position ?? 0) - 20) < 0.01, "\(target)")
            #expect(try await tvMPV.state().get().paused)
            phoneMPV.close()
            tvMPV.close()
        }
    }
}
