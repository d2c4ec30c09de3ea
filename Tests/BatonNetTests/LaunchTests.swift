import BatonClient
import BatonCore
import Foundation
import Testing

/// Launches over real connections to a real agent process: every dispatch path and status.
@Suite("Launching on an agent", .timeLimit(.minutes(1)))
struct LaunchTests {
    /// What the agent's Lua launch functions saw last: who, the URI and the data.
    static func lastLaunch(_ client: BatonClient, _ agent: AgentProcess) async throws -> ValueDictionary {
        let reply = try await client.send([:], to: "launches", app: Fixtures.services, on: agent.address).get()
        return Fixtures.message(reply)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var request: LaunchRequest
        var status: LaunchStatus
        /// Which Lua launch function should have run, with which URI (nil: none).
        var launched: (who: String, uri: String)?

        var testDescription: String { name }
    }

    static let dispatch: [Case] = [
        Case(name: "named app", request: LaunchRequest(uri: "media:a", appID: Fixtures.alt), status: .success, launched: ("alt", "media:a")),
        Case(name: "named app wins over preferences", request: LaunchRequest(uri: "media:b", appID: Fixtures.alt, preferredAppIDs: [Fixtures.player]), status: .success, launched: ("alt", "media:b")),
        Case(name: "missing app", request: LaunchRequest(uri: "media:c", appID: "org.test.nope"), status: .appUnavailable, launched: nil),
        Case(name: "missing app ignores the fallback", request: LaunchRequest(uri: "media:c", appID: "org.test.nope", fallbackURI: "media:fb"), status: .appUnavailable, launched: nil),
        Case(name: "named app without the scheme", request: LaunchRequest(uri: "alt:d", appID: Fixtures.player), status: .protocolUnavailable, launched: nil),
        Case(name: "named app that takes no scheme", request: LaunchRequest(uri: "media:e", appID: Fixtures.services), status: .protocolUnavailable, launched: nil),
        Case(name: "first preferred app that takes the scheme", request: LaunchRequest(uri: "media:f", preferredAppIDs: ["org.test.nope", Fixtures.services, Fixtures.alt, Fixtures.player]), status: .success, launched: ("alt", "media:f")),
        Case(name: "preferences in order", request: LaunchRequest(uri: "media:g", preferredAppIDs: [Fixtures.player, Fixtures.alt]), status: .success, launched: ("player", "media:g")),
        Case(name: "preferred app beats the device handler", request: LaunchRequest(uri: "shared:h", preferredAppIDs: [Fixtures.alt]), status: .success, launched: ("alt", "shared:h")),
        Case(name: "any app that takes the scheme, the first configured", request: LaunchRequest(uri: "media:i"), status: .success, launched: ("player", "media:i")),
        Case(name: "scheme is case-insensitive", request: LaunchRequest(uri: "MEDIA:j"), status: .success, launched: ("player", "MEDIA:j")),
        Case(name: "preferences that do not take the scheme fall through to any app", request: LaunchRequest(uri: "alt:k", preferredAppIDs: [Fixtures.player]), status: .success, launched: ("alt", "alt:k")),
        Case(name: "fallback", request: LaunchRequest(uri: "nothing:l", fallbackURI: "media:fallback"), status: .success, launched: ("player", "media:fallback")),
        Case(name: "fallback without the preferences", request: LaunchRequest(uri: "nothing:m", fallbackURI: "media:fallback2", preferredAppIDs: [Fixtures.alt]), status: .success, launched: ("player", "media:fallback2")),
        Case(name: "nothing takes it", request: LaunchRequest(uri: "nothing:n"), status: .protocolUnavailable, launched: nil),
        Case(name: "nothing takes the fallback either", request: LaunchRequest(uri: "nothing:o", fallbackURI: "alsonothing:o"), status: .protocolUnavailable, launched: nil),
        Case(name: "a URI without a scheme", request: LaunchRequest(uri: "no scheme here"), status: .protocolUnavailable, launched: nil),
    ]

    @Test("dispatch order and statuses", arguments: dispatch)
    func dispatchOrder(_ c: Case) async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (status, detail) = await client.launch(c.request, on: agent.address)
            #expect(status == c.status, "\(detail)")
            if status != .success { #expect(!detail.isEmpty) }
            let last = try await Self.lastLaunch(client, agent)
            if let launched = c.launched {
                #expect(last["count"] == .int(1))
                #expect(last["who"] == .string(launched.who))
                #expect(last["uri"] == .string(launched.uri))
            } else {
                #expect(last["count"] == .int(0), "nothing should have launched: \(last)")
            }
        }
    }

    @Test("the device handler runs when no app is named or preferred; the URI is one argument")
    func handler() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let uri = #"shared:it's a "test"; rm -rf / && echo $HOME `id` | cat > x {uri} \n"#
            let out = agent.directory.file("handler.args")
            let (status, detail) = await client.launch(LaunchRequest(uri: uri, data: ["out": .string(out)]), on: agent.address)
            #expect(status == .success, "\(detail)")
            let written = await eventually { agent.directory.read("handler.args") != nil }
            #expect(written, "the handler never wrote its arguments; agent log:\n\(agent.log)")
            #expect(agent.directory.read("handler.args") == "1\n<\(uri)>\n")
            // The handler ran, not the app that takes shared: too.
            let last = try await Self.lastLaunch(client, agent)
            #expect(last["count"] == .int(0))
        }
    }

    @Test("an app's argv gets the URI and {data.KEY} as single arguments")
    func argvApp() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let uri = "argv:a b;c 'd' \"e\" | f"
            let out = agent.directory.file("app.args")
            let data: ValueDictionary = ["out": .string(out), "title": .string("two words; \"quoted\"")]
            let (status, detail) = await client.launch(LaunchRequest(uri: uri, appID: Fixtures.argv, data: data), on: agent.address)
            #expect(status == .success, "\(detail)")
            let written = await eventually { agent.directory.read("app.args") != nil }
            #expect(written, "the app never wrote its arguments; agent log:\n\(agent.log)")
            #expect(agent.directory.read("app.args") == "2\n<\(uri)>\n<two words; \"quoted\">\n")
        }
    }

    @Test("a handler or app command that cannot start gives unknown, and the agent serves on")
    func unstartable() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            for (uri, program) in [("nohandler:x", "/nonexistent/baton-test-handler"), ("nostart:x", "/nonexistent/baton-test-program")] {
                let (status, detail) = await client.launch(LaunchRequest(uri: uri), on: agent.address)
                #expect(status == .unknown, "\(uri): \(detail)")
                #expect(detail.contains(program), "\(detail)")
                let (again, _) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
                #expect(again == .success)
            }
        }
    }

    @Test("a Lua launch function's return value is the status", arguments: LaunchStatus.allCases)
    func luaStatus(_ expected: LaunchStatus) async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (status, detail) = await client.launch(LaunchRequest(uri: "status:\(expected.rawValue)", appID: Fixtures.status), on: agent.address)
            #expect(status == expected)
            #expect(detail == "detail of \(expected.rawValue)")
        }
    }

    @Test("a Lua launch function: nil or nothing is success; an error or a non-status is unknown")
    func luaSpecialReturns() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            for (what, expected) in [("nil", LaunchStatus.success), ("nothing", .success), ("error", .unknown), ("number", .unknown), ("bogus", .unknown)] {
                let (status, detail) = await client.launch(LaunchRequest(uri: "status:\(what)", appID: Fixtures.status), on: agent.address)
                #expect(status == expected, "status:\(what) → \(status): \(detail)")
                if what == "error" { #expect(detail.contains("the launch function broke"), "\(detail)") }
            }
        }
    }

    @Test("launch data reaches the launch function with its types")
    func launchData() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let data: ValueDictionary = [
                "position": .double(83.5), "count": .int(-3), "title": .string("Film"), "paused": .bool(true),
                "ids": .array([.int(1), .int(2)]), "nested": .dictionary(["k": .string("v")]),
            ]
            let (status, detail) = await client.launch(LaunchRequest(uri: "media:film", appID: Fixtures.player, data: data), on: agent.address)
            #expect(status == .success, "\(detail)")
            let last = try await Self.lastLaunch(client, agent)
            #expect(last["data"] == .dictionary(data))
        }
    }

    @Test("launch data over the agent's --max-message gives value_set_too_large; the connection lives on")
    func tooLarge() async throws {
        try await withAgent(arguments: ["--max-message", "64K"]) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            // A channel opened first proves the connection is the same one afterwards.
            let (channel, openStatus, _) = await client.openService("echo", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(openStatus)")
            let big = String(repeating: "x", count: 70 * 1024)
            let (status, detail) = await client.launch(LaunchRequest(uri: "media:big", data: ["blob": .string(big)]), on: agent.address)
            #expect(status == .valueSetTooLarge, "\(detail)")
            let (small, _) = await client.launch(LaunchRequest(uri: "media:small"), on: agent.address)
            #expect(small == .success)
            let reply = await conn.send(["still": .bool(true)])
            #expect(Fixtures.message(reply) == ["still": .bool(true)])
            #expect(conn.closedStatus == nil)
            // A service message over the limit, likewise.
            let tooBig = await conn.send(["blob": .string(big)])
            #expect(tooBig.status == .messageSizeTooLarge, "\(tooBig)")
            #expect(Fixtures.message(await conn.send(["after": .int(1)])) == ["after": .int(1)])
            conn.close()
        }
    }
}
