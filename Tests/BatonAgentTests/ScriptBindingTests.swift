import BatonAgent
import BatonClient
import BatonCore
import BatonLua
import BatonNet
import BatonSecurity
import Foundation
import NIOCore
import NIOPosix
import Testing

/// Values a script handed to `capture`, in order.
final class Captured: @unchecked Sendable {
    var values: [Value] = []
    var failures: [ScriptFailure] = []
}

/// An agent listening on loopback over mutual TLS, and a way to run scripts against it as a
/// device of the same account.
struct LiveAgent {
    let agent: Agent
    let address: String
    let security: ConnectionSecurity
    /// The agent's device id: its certificate's, which its clients check.
    var id: String { security.trustStore!.credentials.deviceID }

    /// An account made in a temporary folder (left for the system to clean).
    static func makeSecurity() throws -> ConnectionSecurity {
        let folder = ConfigurationFolder(path: FileManager.default.temporaryDirectory.path + "/baton-agent-tests-\(UUID().uuidString)")
        let credentials = try DeviceCredentials.loadOrCreate(in: folder, deviceName: "agent tests")
        return try .tls(credentials: credentials, in: folder)
    }

    static let config = """
        device{ name = "Living Room TV", kind = "tv", model = "X-900" }
        app{ id = "org.example.player", name = "Player", schemes = {"media"},
             launch = function(uri, data) if data.deny then return "denied_by_remote_system" end return "success" end,
             services = {
               echo = function(msg) return msg end,
               -- Asks the client back on the same channel and returns what it answered.
               ask = function(msg, conn)
                 local reply, status = conn:send{ question = msg.question }
                 return { answer = reply and reply.answer or status }
               end,
               hangup = function(msg, conn) conn:close() return { ok = true } end,
             } }
        """

    static func start() async throws -> LiveAgent {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let security = try makeSecurity()
        let defaults = AgentConfiguration(device: DeviceInfo(id: security.trustStore!.credentials.deviceID, name: "x", kind: .desktop))
        let agent = try await Agent.start(config: .string(config, chunkName: "agent.lua"), defaults: defaults,
                                          options: RuntimeOptions(), on: group.next()).get()
        let server = try await agent.listen(host: "127.0.0.1", port: 0, security: security).get()
        return LiveAgent(agent: agent, address: "127.0.0.1:\(server.localAddress.port!)", security: security)
    }

    /// Runs `code` with `--peer` set to the agent; `ADDR` in the code is replaced by its
    /// address, `ID` by its id.
    func run(_ code: String, timeout: Duration = .seconds(20)) async throws -> (RunOutcome, Captured) {
        let captured = Captured()
        let options = RuntimeOptions(timeout: timeout) { captured.failures.append($0) }
        var network = DeviceAccess.Options()
        network.discovery.peers = [DeviceAddress(address)!]
        network.discovery.mdns = nil
        network.security = { [security] in security }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }
        let source = code.replacingOccurrences(of: "ADDR", with: address).replacingOccurrences(of: "ID", with: id)
        let outcome = try await LuaRuntime.run(
            .string(source, chunkName: "script"), options: options, modules: BatonModules.standard(network: network), on: group.next()
        ) { runtime in
            runtime.registerGlobal("capture") { call in
                captured.values.append((try? call.runtime.value(at: 1, on: call.lua)) ?? .string("unconvertible"))
                return .values(0)
            }
        }.get()
        return (outcome, captured)
    }
}

@Suite("Lua bindings against a live agent: find, launch, app services")
struct ScriptBindingTests {
    @Test("find by address and by name; device fields; dev:apps()")
    func find() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await live.run("""
            local byAddress = baton.find("ADDR")
            local byName = baton.find("Living Room TV")
            capture({ byAddress.name, byName.id, byName.kind, byName.model, byName.address })
            local apps = byName:apps()
            capture({ apps[1].id, apps[1].name, apps[1].schemes[1], apps[1].services[1] })
            local none, why = baton.find("Kitchen")
            capture(tostring(none) .. " " .. why)
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [
            .array([.string("Living Room TV"), .string(live.id), .string("tv"), .string("X-900"), .string(live.address)]),
            .array([.string("org.example.player"), .string("Player"), .string("media"), .string("ask")]),
            .string("nil not_found"),
        ])
    }

    @Test("devices, filters, watch, and launch by name or id through the directory")
    func directory() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await live.run("""
            local all = baton.devices()
            capture(table.concat({ #all, all[1].name, all[1].status, all[1].transports[1] }, " "))
            capture(#baton.devices(baton.filter{ kind = { "phone", "speaker" } }))
            capture(#baton.devices({ kind = "tv", platform = "linux", transport = "local" }))
            capture(#baton.devices({ transport = "cloud" }))
            local tv = baton.find("ID")
            capture(tv.name)
            capture(baton.launch("Living Room TV", "media:film", { app = "org.example.player" }))
            capture(baton.launch(tv.id, "media:film", { app = "org.example.player" }))
            capture(select(2, pcall(baton.filter, { kind = "toaster" })))
            capture(select(2, pcall(baton.devices, { colour = "red" })))
            local seen = {}
            do
              local w <close> = baton.watch(nil, {
                added = function(d) seen[#seen + 1] = "added " .. d.name end,
                enumeration_completed = function() seen[#seen + 1] = "enumerated" end,
              })
              baton.sleep(0.2)
            end
            capture(seen)
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [
            .string("1 Living Room TV available local"),
            .int(0), .int(1), .int(0),
            .string("Living Room TV"),
            .string("success"), .string("success"),
            .string("baton.filter: unknown kind 'toaster' (kinds: desktop, laptop, phone, tablet, tv, xbox, speaker, hub, iot, holographic, unknown)"),
            .string("baton.devices: unknown option 'colour' (options: authorization, kind, platform, status, transport)"),
            .array([.string("added Living Room TV"), .string("enumerated")]),
        ])
    }

    @Test("launch answers the agent's status; unreachable devices answer remote_system_unavailable")
    func launch() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await live.run("""
            local tv = baton.find("Living Room TV")
            capture(baton.launch(tv, "media:film", { app = "org.example.player", data = { position = 83.5 } }))
            capture(baton.launch("ADDR", "media:film", { data = { deny = true } }))
            capture(baton.launch(tv, "media:film", { app = "org.example.nope" }))
            capture(baton.launch(tv, "ftp:x"))
            capture(baton.launch("127.0.0.1:1", "media:film"))
            capture(select(2, pcall(baton.launch, tv, "media:x", { data = { 1, "a" } })))
            capture(select(2, pcall(baton.launch, "not an address", "media:x")))
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values.prefix(5) == [
            .string("success"), .string("denied_by_remote_system"), .string("app_unavailable"),
            .string("protocol_unavailable"), .string("remote_system_unavailable"),
        ])
        #expect(captured.values.dropFirst(5).first == .string("baton.launch: data[2]: expected number like data[1], got string"))
        // An unknown device is not_found, as for the commands: a classed error, not a usage one.
        guard case .dictionary(let unknown)? = captured.values.last, case .string(let message)? = unknown["message"] else {
            Issue.record("an unknown device raised \(String(describing: captured.values.last)), not a classed error")
            return
        }
        #expect(unknown["class"] == .string("not_found"))
        #expect(message.hasSuffix("baton.launch: no single known device is named or has the id \"not an address\"; find it first with baton.find, or give host:port"), "\(message)")
    }

    @Test("a channel carries typed messages both ways and keeps the run alive until it closes")
    func channel() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await live.run("""
            local tv = baton.find("Living Room TV")
            local conn, status = baton.appservice.open(tv, "echo", { package = "org.example.player" })
            capture(status)
            local msg = { s = "hé", i = math.maxinteger, d = 0.5, b = true, when = baton.date(60), id = baton.uuid("00000000-0000-0000-0000-0000000000ff"),
                          raw = baton.bytes("\\0\\1"), list = {1, 2}, empty = baton.array{}, nested = { deeper = {} } }
            local reply, rstatus = conn:send(msg)
            capture(rstatus)
            capture(reply)
            -- The agent asks back on the same channel.
            local results = {}
            local ask = baton.appservice.open(tv, "ask", { package = "org.example.player" })
            ask.on_request = function(m) return { answer = m.question .. "!" } end
            results.asked = (ask:send{ question = "ready" }).answer
            ask:close()
            -- The agent hangs up while our request is pending: it gets the closed status, and
            -- on_closed hears completed.
            local hang = baton.appservice.open(tv, "hangup", { package = "org.example.player" })
            hang.on_closed = function(s) results.hang_closed = s end
            results.hang_reply = select(2, hang:send{})
            while not results.hang_closed do baton.sleep(0.005) end
            conn:close()
            results.after_close = select(2, conn:send{})
            results.no_app = select(2, baton.appservice.open(tv, "echo", { package = "org.example.nope" }))
            results.no_service = select(2, baton.appservice.open(tv, "nope", { package = "org.example.player" }))
            results.one_shot = select(2, baton.appservice.send(tv, "echo", { x = 1 }, { package = "org.example.player" }))
            capture(results)
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values.first == .string("success"))
        #expect(captured.values.dropFirst().first == .string("success"))
        if case .dictionary(let reply) = captured.values[2] {
            #expect(reply["s"] == .string("hé") && reply["i"] == .int(Int64.max) && reply["d"] == .double(0.5))
            #expect(reply["b"] == .bool(true) && reply["raw"] == .bytes([0, 1]) && reply["list"] == .array([.int(1), .int(2)]))
            #expect(reply["empty"] == .array([]) && reply["nested"] == .dictionary(["deeper": .dictionary([:])]))
            #expect(reply["when"] == .date(.init(timeIntervalSince1970: 60)))
        } else {
            Issue.record("not a reply: \(captured.values)")
        }
        #expect(captured.values.last == .dictionary([
            "asked": .string("ready!"), "hang_reply": .string("app_service_connection_closed"),
            "hang_closed": .string("completed"), "after_close": .string("app_service_connection_closed"),
            "no_app": .string("app_not_installed"), "no_service": .string("app_service_unavailable"), "one_shot": .string("success"),
        ]))
    }

    @Test("a cancelled task's channel closes with it (its on_closed hears completed) and no longer keeps the run going")
    func cancelClosesChannel() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await live.run("""
            local conn, closedWith
            local t = baton.spawn(function()
              conn = baton.appservice.open("ADDR", "echo", { package = "org.example.player" })
              conn.on_closed = function(status) closedWith = status end
              baton.sleep(60)
            end)
            while not conn do baton.sleep(0.005) end
            capture(t:cancel())
            while not closedWith do baton.sleep(0.005) end
            capture(closedWith)
            capture(select(2, conn:send{ x = 1 }))
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [.bool(true), .string("completed"), .string("app_service_connection_closed")])
    }
}
