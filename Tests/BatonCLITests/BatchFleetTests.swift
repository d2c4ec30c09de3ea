import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `baton batch` against a fleet of real agents: what the report says happened is what the
/// agents received.
@Suite("Batches over a fleet of agents", .serialized)
struct BatchFleetTests {
    static let agentCount = 10
    static let itemCount = 1000
    /// The agent killed mid-batch and restarted on its port.
    static let killed = 3
    /// The item whose first attempt has the test kill its agent (item n is on agent (n-1) % 10).
    static let gate = 304
    /// Items that raise a script error before launching (not retried).
    static let raising: Set<Int> = [101, 222, 505, 777, 999]
    /// Items that sleep past --item-timeout (timeout: not retried, as --retry-on says).
    static let hanging: Set<Int> = [150, 462, 875]
    static let retries = 10

    static let job = #"""
        local function exists(path) local f = io.open(path) if f then f:close() return true end return false end
        local function touch(path) assert(io.open(path, "w")):close() end

        function job(item, ctx)
          if item.fail == "raise" then error("broken " .. ctx.key) end
          if item.fail == "hang" then baton.sleep(60) end
          if item.gate then
            if ctx.attempt == 1 then
              -- The test kills this item's agent, then says so; the launch below finds it gone.
              -- (A deadline short of --item-timeout, so that a kill that never came says so.)
              touch("kill-now")
              local deadline = baton.now() + 4
              while not exists("killed") do
                if baton.now() > deadline then error("the test never killed the agent") end
                baton.sleep(0.005)
              end
            elseif ctx.attempt == 2 then
              touch("restart-now")  -- the test restarts the agent on its port
            end
          end
          baton.check(baton.launch(item.agent, "fleet:" .. ctx.key, { app = "fleet", timeout = 10 }))
        end
        """#

    static func agentConfig(_ index: Int, received: String) -> String {
        """
        device{ name = "Fleet \(index)", kind = "tv" }
        app{ id = "fleet", schemes = {"fleet"}, launch = function(uri, data)
          local f = assert(io.open("\(received)", "a")) f:write(uri, "\\n") f:close()
          return "success"
        end }
        """
    }

    static func key(_ n: Int) -> String { String(format: "item-%04d", n) }

    /// The agent goes with SIGKILL (its connections reset, launches in flight lost) or SIGTERM
    /// (it shuts down as it means to).
    @Test("1,000 items over 10 agents, one agent killed and restarted mid-batch, items that raise and items that time out: the report's counts are exact, and every item that succeeded reached its agent",
          arguments: [SIGKILL, SIGTERM])
    func fleetWithFailures(signal: Int32) async throws {
        let dir = try ScriptDirectory()
        let root = dir.url
        func path(_ name: String) -> String { root.appendingPathComponent(name).path }

        var agents: [FleetAgent] = []
        defer { for agent in agents { agent.kill() } }
        for i in 0..<Self.agentCount {
            let folder = root.appendingPathComponent("agent-\(i)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try dir.write("agent-\(i)/agent.lua", Self.agentConfig(i, received: folder.appendingPathComponent("received.txt").path))
            agents.append(try await FleetAgent.start(
                config: folder.appendingPathComponent("agent.lua").path, directory: folder, tag: "run-1"))
        }
        let addresses = agents.map(\.address)

        func agentOf(_ n: Int) -> Int { (n - 1) % Self.agentCount }
        var lines: [String] = []
        for n in 1...Self.itemCount {
            var fields = [#""key": "\#(Self.key(n))""#, #""agent": "\#(addresses[agentOf(n)])""#]
            if Self.raising.contains(n) { fields.append(#""fail": "raise""#) }
            if Self.hanging.contains(n) { fields.append(#""fail": "hang""#) }
            if n == Self.gate { fields.append(#""gate": true"#) }
            lines.append("{" + fields.joined(separator: ", ") + "}")
        }
        try dir.write("items.jsonl", lines.joined(separator: "\n") + "\n")
        try dir.write("job.lua", Self.job)
        #expect(agentOf(Self.gate) == Self.killed)

        // Backoff: pauses of at least 0.125, 0.25, 0.5 s, then 1 s (jitter halves them at
        // worst), so an item's retries span 7.8 s or more: the restart needs far less. Only
        // unavailable is retried, so the hanging items cost one --item-timeout each.
        async let running = BatonProcess.run(
            ["batch", "job.lua", "--input", "items.jsonl", "--jobs", "16", "--retries", "\(Self.retries)",
             "--retry-on", "unavailable", "--backoff", "250ms..2s", "--item-timeout", "5s", "--tolerate", "8",
             "--report", "report.json", "--insecure", "--no-mdns"],
            environment: ["XDG_CONFIG_HOME": path("client-xdg")], directory: root, limit: 120)

        // The kill, when the gate item says; the restart, once the gate item has failed.
        let sawGate = await waitForFile(path("kill-now"), within: 60)
        #expect(sawGate, "the gate item never ran")
        if sawGate {
            #expect(agents[Self.killed].kill(signal), "the agent did not end on signal \(signal)")
            try dir.write("killed", "")
            let sawRetry = await waitForFile(path("restart-now"), within: 30)
            #expect(sawRetry, "the gate item was never retried")
            let folder = root.appendingPathComponent("agent-\(Self.killed)", isDirectory: true)
            agents.append(try await FleetAgent.start(
                config: folder.appendingPathComponent("agent.lua").path, port: agents[Self.killed].port,
                directory: folder, tag: "run-2"))
        }
        let result = try await running

        #expect(result.exitCode == 0, "\(result)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("report.json"))) as? [String: Any],
            "\(result)")
        #expect(report["status"] as? String == "succeeded_with_failures")
        let counts = try #require(report["counts"] as? [String: Int])
        #expect(counts["total"] == 1000)
        #expect(counts["succeeded"] == 992)
        #expect(counts["failed"] == 8)
        #expect(counts["changed"] == 0)
        let byClass = try #require(report["failures_by_class"] as? [String: Int])
        #expect(byClass["script"] == 5 && byClass["timeout"] == 3, "\(byClass)")
        #expect(byClass.values.reduce(0, +) == 8, "\(byClass)")

        let items = try #require(report["items"] as? [[String: Any]])
        try #require(items.count == Self.itemCount)
        var received: [[String: Int]] = []
        for i in 0..<Self.agentCount {
            let text = (try? String(contentsOfFile: path("agent-\(i)/received.txt"), encoding: .utf8)) ?? ""
            var seen: [String: Int] = [:]
            for line in text.split(separator: "\n") { seen[String(line), default: 0] += 1 }
            received.append(seen)
        }
        var retried = 0, killedAgentRetried = 0
        for n in 1...Self.itemCount {
            let item = items[n - 1], key = Self.key(n), agent = agentOf(n)
            let status = item["status"] as? String, attempts = item["attempts"] as? Int ?? -1
            let error = item["error"] as? [String: Any]
            retried += attempts - 1
            // Only its own agent ever hears of an item.
            for other in 0..<Self.agentCount where other != agent {
                #expect(received[other]["fleet:\(key)"] == nil, "\(key) reached agent \(other), not its agent \(agent)")
            }
            let times = received[agent]["fleet:\(key)"] ?? 0
            #expect(item["key"] as? String == key)
            if Self.raising.contains(n) {
                #expect(status == "failed" && attempts == 1 && error?["class"] as? String == "script", "\(key): \(item)")
                #expect((error?["message"] as? String)?.contains("broken \(key)") == true, "\(key): \(item)")
                #expect(times == 0, "\(key) raised before launching, yet its agent received it \(times) times")
            } else if Self.hanging.contains(n) {
                #expect(status == "failed" && attempts == 1 && error?["class"] as? String == "timeout", "\(key): \(item)")
                #expect(error?["retryable"] as? Bool == false, "\(key): \(item)")
                #expect(times == 0, "\(key) never launched, yet its agent received it \(times) times")
            } else if agent == Self.killed {
                // Its agent's outage may have failed any attempt (unavailable, retried); a
                // launch in flight when it died may have reached it before the connection went.
                #expect(status == "ok" && (1...Self.retries + 1).contains(attempts), "\(key): \(item)")
                #expect((1...max(1, attempts)).contains(times), "\(key) succeeded after \(attempts) attempts; its agent received it \(times) times")
                if attempts > 1 { killedAgentRetried += 1 }
                if n == Self.gate { #expect(attempts >= 2, "the gate item's first launch found its agent up: \(item)") }
            } else {
                #expect(status == "ok" && attempts == 1, "\(key): \(item)")
                #expect(times == 1, "\(key) succeeded at its first attempt; its agent received it \(times) times")
            }
        }
        #expect(counts["retried"] == retried)
        #expect(killedAgentRetried >= 1)
        // Nothing the batch never asked for: every line an agent received is one of its items.
        for i in 0..<Self.agentCount {
            let strangers = received[i].keys.filter { uri in
                guard let n = Int(uri.dropFirst("fleet:item-".count)), uri.hasPrefix("fleet:item-") else { return true }
                return agentOf(n) != i
            }
            #expect(strangers.isEmpty, "agent \(i) received \(strangers)")
        }
        // Every agent (the restarted one too) is still up and shuts down cleanly.
        for agent in agents where agent.exitStatus == nil {
            #expect(agent.kill(SIGTERM), "an agent did not stop on SIGTERM")
            #expect(agent.exitStatus == 0, "the agent exited with \(agent.exitStatus.map(String.init) ?? "?"); its log:\n\(agent.log)")
        }
    }
}
