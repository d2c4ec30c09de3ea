import BatonAgent
import BatonCore
import BatonLua
import NIOCore
import NIOPosix

/// Failures the agent's runtime reported (errors in launch functions and providers).
final class Reports: @unchecked Sendable {
    var failures: [ScriptFailure] = []
}

/// Starts an agent from configuration text, on a loop of its own.
func startAgent(_ config: String, reports: Reports = Reports()) async throws -> Agent {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let defaults = AgentConfiguration(device: DeviceInfo(id: "00000000-0000-0000-0000-000000000001", name: "Test Host", kind: .desktop))
    let options = RuntimeOptions { reports.failures.append($0) }
    return try await Agent.start(
        config: .string(config, chunkName: "agent.lua"), defaults: defaults, options: options, on: group.next()
    ).get()
}

/// The message a configuration fails with, or nil if it loads.
func configurationError(_ config: String) async -> String? {
    do {
        let agent = try await startAgent(config)
        agent.stop()
        return nil
    } catch let failure as ScriptFailure {
        return failure.message
    } catch {
        return "\(error)"
    }
}
