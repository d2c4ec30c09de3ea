import BatonAgent
import BatonCore
import Testing

@Suite("Launch dispatch follows Rome's order")
struct LaunchDispatchTests {
    static let config = """
        handler{ scheme = "https", run = {"open-https", "{uri}"} }
        app{ id = "player", schemes = {"media", "https"}, run = {"player", "{uri}"} }
        app{ id = "viewer", schemes = {"media", "image"}, run = {"viewer", "{uri}"} }
        app{ id = "services-only", services = { s = function() end } }
        """

    /// What the request resolves to, in words: `app player media:x`, `handler https https:x`,
    /// or the status.
    func resolve(_ request: LaunchRequest) async throws -> String {
        let agent = try await startAgent(Self.config)
        defer { agent.stop() }
        switch agent.configuration.resolve(request) {
        case .app(let app, let uri): return "app \(app.info.id) \(uri)"
        case .handler(let handler, let uri): return "handler \(handler.scheme) \(uri)"
        case .refused(let status, _): return status.rawValue
        }
    }

    @Test("each path and each refusal", arguments: [
        (LaunchRequest(uri: "media:film", appID: "viewer"), "app viewer media:film"),
        (LaunchRequest(uri: "media:film", appID: "nope"), "app_unavailable"),
        (LaunchRequest(uri: "https://x", appID: "viewer"), "protocol_unavailable"),
        (LaunchRequest(uri: "media:film", appID: "services-only"), "protocol_unavailable"),
        (LaunchRequest(uri: "media:film", preferredAppIDs: ["nope", "viewer", "player"]), "app viewer media:film"),
        (LaunchRequest(uri: "https://x", preferredAppIDs: ["viewer"]), "handler https https://x"),
        (LaunchRequest(uri: "https://x", preferredAppIDs: ["player"]), "app player https://x"),
        (LaunchRequest(uri: "HTTPS://x"), "handler https HTTPS://x"),
        (LaunchRequest(uri: "image:cat.png"), "app viewer image:cat.png"),
        (LaunchRequest(uri: "media:film"), "app player media:film"),
        (LaunchRequest(uri: "ftp://x", fallbackURI: "https://fallback"), "handler https https://fallback"),
        (LaunchRequest(uri: "ftp://x", appID: "nope", fallbackURI: "https://fallback"), "app_unavailable"),
        (LaunchRequest(uri: "ftp://x", fallbackURI: "gopher://y"), "protocol_unavailable"),
        (LaunchRequest(uri: "ftp://x"), "protocol_unavailable"),
        (LaunchRequest(uri: "no scheme here"), "protocol_unavailable"),
        (LaunchRequest(uri: ""), "protocol_unavailable"),
    ])
    func dispatch(request: LaunchRequest, expected: String) async throws {
        #expect(try await resolve(request) == expected)
    }

    @Test("{uri} and {data.KEY} are substituted inside argv elements, never through a shell")
    func substitution() throws {
        let template = try ArgvTemplate(["player", "--start={data.position}", "{uri}", "{data.missing}", "{other}", "a{uri}b"])
        let uri = "media:it's; rm -rf / $(x) \"q\""
        #expect(template.argv(uri: uri, data: ["position": .double(83.5)]) == [
            "player", "--start=83.5", uri, "", "{other}", "a\(uri)b",
        ])
    }
}
