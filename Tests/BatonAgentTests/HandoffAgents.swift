import BatonAgent
import BatonClient
import BatonCore
import BatonLua
import BatonNet
import Foundation
import NIOCore
import NIOPosix

/// Agents in this process, each a device of its own listening on loopback in plaintext, and a
/// client of them: for handoffs between players only this target's harnesses start (Kodi, MPRIS).
enum HandoffAgents {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    /// An agent running `config`, and how to reach it.
    static func start(_ config: String) async throws -> (Agent, DeviceTarget) {
        let defaults = AgentConfiguration(device: DeviceInfo(id: UUID().uuidString.lowercased(), name: "x", kind: .desktop))
        let agent = try await Agent.start(config: .string(config, chunkName: "agent.lua"), defaults: defaults, options: RuntimeOptions(), on: group.next()).get()
        let server = try await agent.listen(host: "127.0.0.1", port: 0, security: .insecure).get()
        return (agent, DeviceTarget(DeviceAddress(host: "127.0.0.1", port: server.localAddress.port!)))
    }

    /// A client of such agents.
    static func client() -> BatonClient {
        var options = BatonClient.Options()
        options.security = .insecure
        return BatonClient(eventLoop: group.next(), options: options)
    }

    /// Handoff options with a deadline a loaded machine meets.
    static var options: HandoffOptions {
        var options = HandoffOptions()
        options.timeout = .seconds(60)
        return options
    }

    /// Plays `uri` from `position` on `app` of `device`, answered once it plays.
    static func play(_ uri: String, from position: Double, app: String, on device: DeviceTarget, with client: BatonClient) async throws -> PlaybackProof? {
        let play = PlaybackCommand.play(.init(queue: [uri], position: position))
        let reply = try await client.send(play.message, to: PlaybackCommand.service, app: app, on: device, timeout: .seconds(30)).get()
        return reply.message.flatMap(PlaybackProof.init(message:))
    }
}
