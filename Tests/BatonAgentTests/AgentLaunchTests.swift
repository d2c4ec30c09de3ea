import BatonAgent
import BatonCore
import Foundation
import Testing

@Suite("Launching on the agent: commands and Lua launch functions")
struct AgentLaunchTests {
    @Test("a command handler runs with the URI as one argument and data substituted")
    func commandHandler() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("baton-launch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("launched.txt").path
        let agent = try await startAgent("""
            handler{ scheme = "demo", run = {"sh", "-c", "printf '%s|%s' \\"$1\\" \\"$2\\" > \\"$3\\"", "sh", "{uri}", "{data.position}", "{data.out}"} }
            """)
        defer { agent.stop() }
        let uri = "demo:film?t=83; echo injected"
        let (status, _) = try await agent.launch(LaunchRequest(uri: uri, data: ["position": .double(83.5), "out": .string(out)])).get()
        #expect(status == .success)
        var text = ""
        for _ in 0..<200 where text.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
            text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        }
        #expect(text == "\(uri)|83.5")
    }

    @Test("a handler that cannot start gives unknown, with the reason")
    func missingProgram() async throws {
        let agent = try await startAgent("handler{ scheme = 'x', run = {'/nonexistent/program', '{uri}'} }")
        defer { agent.stop() }
        let (status, detail) = try await agent.launch(LaunchRequest(uri: "x:1")).get()
        #expect(status == .unknown)
        #expect(detail.hasPrefix("cannot start /nonexistent/program: "))
    }

    @Test("a Lua launch function gets the URI and data and answers the status", arguments: [
        ("return nil", LaunchStatus.success),
        ("return", .success),
        ("return 'success'", .success),
        ("return 'denied_by_remote_system'", .deniedByRemoteSystem),
        ("return 'not a status'", .unknown),
        ("error('player crashed')", .unknown),
        ("baton.sleep(0.01) return 'app_unavailable'", .appUnavailable),
        ("assert(uri == 'media:film' and data.position == 83.5 and math.type(data.n) == 'integer') return 'success'", .success),
    ])
    func luaLaunch(body: String, expected: LaunchStatus) async throws {
        let reports = Reports()
        let agent = try await startAgent("""
            app{ id = "player", schemes = {"media"}, launch = function(uri, data) \(body) end }
            """, reports: reports)
        defer { agent.stop() }
        let (status, _) = try await agent.launch(LaunchRequest(uri: "media:film", data: ["position": .double(83.5), "n": .int(1)])).get()
        #expect(status == expected)
        if body.hasPrefix("error") {
            #expect(reports.failures.map(\.message) == ["agent.lua:1: player crashed"])
            #expect(reports.failures.first?.context == "launch function of player")
            // The agent lives on.
            let again = try await agent.launch(LaunchRequest(uri: "media:film")).get()
            #expect(again.0 == .unknown)
        }
    }
}
