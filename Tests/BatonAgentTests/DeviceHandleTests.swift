import BatonAgent
import BatonClient
import BatonCore
import BatonLua
import BatonNet
import Foundation
import NIOCore
import NIOPosix
import Testing

/// A device source that sees `devices` at once, each under its id, and is enumerated.
final class FixedDeviceSource: DeviceSource, @unchecked Sendable {
    let name = "fixed"
    let devices: [RemoteDevice]
    let eventLoop: any EventLoop

    init(_ devices: [RemoteDevice], on eventLoop: any EventLoop) {
        self.devices = devices
        self.eventLoop = eventLoop
    }

    func start(reportingTo directory: any DeviceSourceDelegate) {
        for device in devices { directory.source(self, sees: device, as: device.info.id) }
        directory.sourceEnumerated(self)
    }

    func stop() -> EventLoopFuture<Void> { eventLoop.makeSucceededVoidFuture() }
}

@Suite("Lua device tables are handles resolved by id on the Swift side")
struct DeviceHandleTests {
    /// Runs `code` against `live` with neither mDNS nor peers unless `network` adds a source;
    /// `ADDR` in the code is the agent's address, `DEVICE` its id.
    static func run(_ live: LiveAgent, _ code: String, network configure: (inout DeviceAccess.Options) -> Void = { _ in })
        async throws -> (RunOutcome, Captured)
    {
        let captured = Captured()
        let options = RuntimeOptions(timeout: .seconds(30)) { captured.failures.append($0) }
        var network = DeviceAccess.Options()
        network.discovery.mdns = nil
        network.connectTimeout = .seconds(10)
        network.security = { [security = live.security] in security }
        configure(&network)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }
        let source = code.replacingOccurrences(of: "ADDR", with: live.address).replacingOccurrences(of: "DEVICE", with: live.id)
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

    @Test("a device the directory reaches only through the broker: address nil, routes lists it, and the broker dialer reaches it by id")
    func brokerOnlyDevice() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let account = live.security.trustStore!.credentials.fingerprint.hex
        let route = DeviceRoute.broker(BrokerRoute(account: account, deviceID: live.id))
        let device = RemoteDevice(
            info: DeviceInfo(id: live.id, name: "Living Room TV", kind: .tv), routes: [route], transport: .cloud, account: account,
            sources: [.broker])
        let broker = FakeBrokerDialer(relay: DeviceAddress(live.address)!)
        let (outcome, captured) = try await Self.run(live, """
            local d = baton.find("Living Room TV")
            capture(tostring(d.address)); capture(#d.routes); capture(d.routes[1])
            capture(#d.addresses); capture(d.transports[1]); capture(tostring(d))
            capture(baton.launch(d, "media:film", { app = "org.example.player" }))
            capture(#baton.devices({ transport = "cloud" }))
            capture(#baton.devices({ transport = "local" }))
            """) { network in
            network.dialers = { _ in [TCPDialer(), broker] }
            network.discovery.moreSources = { client in [FixedDeviceSource([device], on: client.eventLoop)] }
        }
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [
            .string("nil"), .int(1), .string("broker:\(live.id)"), .int(0), .string("cloud"), .string("Living Room TV"),
            .string("success"),
            .int(1),
            .int(0),
        ])
        // The name proven and the launch made over the one link the broker dialer made.
        #expect(broker.dialled == [route])
    }

    @Test("a saved table (no run pushed it) is dialled at its address, where its id must answer")
    func savedTable() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        let (outcome, captured) = try await Self.run(live, """
            capture(baton.launch({ id = "DEVICE", address = "127.0.0.1:1" }, "media:nowhere", { app = "org.example.player" }))
            capture(baton.launch({ id = "DEVICE", address = "ADDR" }, "media:saved", { app = "org.example.player" }))
            capture(baton.launch("ADDR", "media:string", { app = "org.example.player" }))
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [.string("remote_system_unavailable"), .string("success"), .string("success")])
    }

    @Test("a table whose address strings were changed after find is still reached by id where the find reached it, not at the strings")
    func tamperedStringsAreNotDialled() async throws {
        let live = try await LiveAgent.start()
        defer { live.agent.stop() }
        // The find's connection is kept under the address; the launch, by id, dials anew.
        let (outcome, captured) = try await Self.run(live, """
            local d = baton.find("ADDR")
            capture({ d.address, d.routes[1] })
            d.address = "127.0.0.1:1"
            d.addresses = { "127.0.0.1:1" }
            d.routes = { "127.0.0.1:1" }
            capture(baton.launch(d, "media:film", { app = "org.example.player" }))
            """)
        #expect(outcome == .completed, "\(captured.failures)")
        #expect(captured.values == [.array([.string(live.address), .string(live.address)]), .string("success")])
    }
}
