import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 21, deliverable 3: a provider stuck in a C function no deadline reaches (here a read
/// from a FIFO nobody writes, as a blocking `os.execute` would be) cannot be unwound; the
/// agent answers its caller at the deadline, serves describes meanwhile, and after
/// `--lua-stall` starts itself again on the same pid and port, so its Lua serves once more.
@Suite("An agent whose Lua is stuck in C")
struct LuaStallTests {
    @Test("a provider blocked in a C read: unknown (timed out) at its deadline, describe served meanwhile; after --lua-stall the agent starts again (same pid, same port) and its providers answer")
    func stuckInCStartsAgain() async throws {
        let directory = try TemporaryDirectory()
        #expect(mkfifo(directory.file("fifo"), 0o600) == 0)
        let port = RevocationPushTests.unusedPort()
        let config = """
            device{ name = "Stall Test", kind = "tv" }
            app{ id = "org.test.stall", services = {
                   stuck = function() local f = io.open("@DIR@/fifo") return { read = f and f:read("a") or "" } end,
                   ping = function() return { pong = true } end } }
            """
        let agent = try await AgentProcess.start(
            config: config, arguments: ["--listen", "127.0.0.1:\(port)", "--lua-stall", "3s", "--no-mdns"], directory: directory)
        let client = makeClient(connectTimeout: .seconds(10))
        defer { client.shutdown() }
        // Connected first: the stuck call's 2 s are the provider's, not a loaded handshake's.
        #expect(try await client.describe(agent.address).get().0.name == "Stall Test")

        let stuck = try await client.send([:], to: "stuck", app: "org.test.stall", on: DeviceTarget(agent.address), timeout: .seconds(2)).get()
        #expect(stuck.status == .unknown && stuck.detail.contains("timed out"), "\(stuck)")
        // Connections are served apart from Lua: the device still describes itself.
        let (device, _) = try await client.describe(agent.address).get()
        #expect(device.name == "Stall Test")

        // Within the stall limit and a start: the same process (pid) answers again on its port.
        let answered = await eventually(within: 40) {
            let reply = try? await client.send([:], to: "ping", app: "org.test.stall", on: DeviceTarget(agent.address), timeout: .seconds(2)).get()
            return reply?.status == .success && reply?.message == ["pong": .bool(true)]
        }
        #expect(answered, "the agent's Lua never answered again; log:\n\(agent.log)")
        #expect(agent.isRunning)
        #expect(agent.log.contains("stuck in a C function no deadline reaches; starting the agent again"), "\(agent.log)")
        #expect(await agent.stop() == 0)
    }
}
