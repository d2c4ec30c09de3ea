import BatonAgent
import BatonCore
import BatonLua
import Testing

@Suite("App service providers on the agent")
struct AgentServiceTests {
    static let config = """
        local count = 0
        app{ id = "org.example.player", services = {
          echo = function(msg, conn) count = count + 1; return { got = msg, count = count, conn = conn } end,
          busy = function() return nil, "resource_limits_exceeded" end,
          refuse = function() return nil end,
          broken = function(msg) error("provider broke on " .. msg.Type) end,
          wrong = function() return "a string" end,
          mixed = function() return { list = {1, "x"} } end,
          slow = function(msg) baton.sleep(0.01) return { slept = true } end,
        } }
        """

    @Test("a provider's table is the response; it keeps its state between requests")
    func echo() async throws {
        let agent = try await startAgent(Self.config)
        defer { agent.stop() }
        let push: @Sendable (LuaState) -> Void = { $0.push("channel 7") }
        let first = try await agent.serve(app: "org.example.player", service: "echo", message: ["Type": .string("ping")], pushConnection: push).get()
        #expect(first == ServiceReply(status: .success, message: ["got": .dictionary(["Type": .string("ping")]), "count": .int(1), "conn": .string("channel 7")]))
        let second = try await agent.serve(app: "org.example.player", service: "echo", message: [:], pushConnection: push).get()
        #expect(second.message?["count"] == .int(2))
    }

    @Test("statuses and failures", arguments: [
        ("busy", ResponseStatus.resourceLimitsExceeded),
        ("refuse", .failure),
        ("broken", .failure),
        ("wrong", .failure),
        ("mixed", .failure),
        ("slow", .success),
    ])
    func statuses(service: String, expected: ResponseStatus) async throws {
        let reports = Reports()
        let agent = try await startAgent(Self.config, reports: reports)
        defer { agent.stop() }
        let reply = try await agent.serve(app: "org.example.player", service: service, message: ["Type": .string("ping")], pushConnection: { $0.pushNil() }).get()
        #expect(reply.status == expected, "\(reply)")
        if service == "broken" {
            #expect(reply.detail == "agent.lua:6: provider broke on ping")
            #expect(reports.failures.first?.context == "service broken of org.example.player")
            #expect(reports.failures.first?.traceback.contains("agent.lua:6") == true)
            // The agent serves on.
            let next = try await agent.serve(app: "org.example.player", service: "slow", message: [:], pushConnection: { $0.pushNil() }).get()
            #expect(next.status == .success)
        }
        if service == "mixed" {
            #expect(reply.detail.hasSuffix("response.list[2]: expected number like list[1], got string"))
        }
    }

    @Test("opening: missing app and missing service get Rome's statuses")
    func openStatuses() async throws {
        let agent = try await startAgent(Self.config)
        defer { agent.stop() }
        #expect(agent.openStatus(app: "org.example.player", service: "echo").0 == .success)
        #expect(agent.openStatus(app: "org.example.player", service: "nope").0 == .appServiceUnavailable)
        #expect(agent.openStatus(app: "org.example.nope", service: "echo").0 == .appNotInstalled)
    }
}
