import BatonClient
import BatonCore
import Foundation
import Testing

/// A caller of another account learns from launch and open no more than Describe shows it: an
/// app not marked anonymous (or the device's handler) answers exactly as one that is not
/// there, status and words, but for the name asked for.
@Suite("A stranger's launches and opens", .timeLimit(.minutes(2)))
struct StrangerAnswerTests {
    typealias F = AccountFixtures

    /// `text` with `name` put as NAME, to compare answers about two names.
    func generic(_ text: String, _ name: String) -> String {
        text.replacingOccurrences(of: name, with: "NAME")
    }

    @Test("launch by app id, by scheme, of a handler's scheme; open of a private app's service or of none: the same status and words as for nothing there")
    func privateIsAsAbsent() async throws {
        let other = try TestAccount()
        try await withAgent(F.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            func launch(_ uri: String, app: String? = nil) async -> (LaunchStatus, String) {
                await stranger.launch(LaunchRequest(uri: uri, appID: app, data: ["out": .string(agent.directory.file("ran"))]), on: agent.address)
            }

            let namedPrivate = await launch("private:x", app: F.privateApp)
            let namedNone = await launch("private:x", app: "org.test.nothing")
            #expect(namedPrivate.0 == .deniedByRemoteSystem, "\(namedPrivate)")
            #expect(namedPrivate.0 == namedNone.0)
            #expect(generic(namedPrivate.1, F.privateApp) == generic(namedNone.1, "org.test.nothing"), "\(namedPrivate) vs \(namedNone)")

            let byScheme = await launch("private:x")
            let byHandler = await launch("door:x")
            let byNothing = await launch("zzz:x")
            #expect(byNothing.0 == .deniedByRemoteSystem, "\(byNothing)")
            for answer in [byScheme, byHandler] {
                #expect(answer.0 == byNothing.0, "\(answer)")
            }
            #expect(generic(byScheme.1, "private:") == generic(byNothing.1, "zzz:"), "\(byScheme) vs \(byNothing)")
            #expect(generic(byHandler.1, "door:") == generic(byNothing.1, "zzz:"), "\(byHandler) vs \(byNothing)")

            let openPrivate = await stranger.openService("peek", app: F.privateApp, on: agent.address)
            let openPrivateNoService = await stranger.openService("nosuch", app: F.privateApp, on: agent.address)
            let openNone = await stranger.openService("peek", app: "org.test.nothing", on: agent.address)
            #expect(openPrivate.0 == nil && openNone.0 == nil && openPrivateNoService.0 == nil)
            #expect(openPrivate.1 == .notAuthorized, "\(openPrivate.2)")
            #expect(openNone.1 == openPrivate.1 && openPrivateNoService.1 == openPrivate.1, "\(openNone.2), \(openPrivateNoService.2)")
            #expect(generic(openPrivate.2, F.privateApp) == generic(openNone.2, "org.test.nothing"), "\(openPrivate.2) vs \(openNone.2)")
            #expect(openPrivateNoService.2 == openPrivate.2)

            // The command line: 77 either way, the same line but for the name.
            let anonymous = ["--authorization", "anonymous"]
            let device = agent.address.description
            let cliPrivate = try await runBaton(["launch", device, "private:x", "--app", F.privateApp] + anonymous, xdg: other.home.path)
            let cliNone = try await runBaton(["launch", device, "private:x", "--app", "org.test.nothing"] + anonymous, xdg: other.home.path)
            #expect(cliPrivate.code == 77 && cliNone.code == 77, "\(cliPrivate) \(cliNone)")
            #expect(generic(cliPrivate.stdout, F.privateApp) == generic(cliNone.stdout, "org.test.nothing"), "\(cliPrivate) vs \(cliNone)")

            // Nothing ran; the anonymous app still does, and the device's own account sees all.
            #expect(agent.directory.read("ran") == nil)
            #expect(await launch("public:x").0 == .success)
            let own = makeClient()
            defer { own.shutdown() }
            #expect(await own.launch(LaunchRequest(uri: "private:x", appID: "org.test.nothing"), on: agent.address).0 == .appUnavailable)
            #expect(await own.openService("peek", app: "org.test.nothing", on: agent.address).1 == .appNotInstalled)
        }
    }

    @Test("a stranger sending 300 launches at once to a private app: each denied, and the agent's log holds at most 5 lines of them a 10 s interval, then a count")
    func refusedLaunchesAreLoggedAtABoundedRate() async throws {
        let other = try TestAccount()
        try await withAgent(F.config) { agent in
            let stranger = makeClient(security: other.security, unlistedAgents: .anyAccount)
            defer { stranger.shutdown() }
            let started = Date()
            let statuses = await withTaskGroup(of: LaunchStatus.self) { group in
                for n in 0..<300 {
                    group.addTask { await stranger.launch(LaunchRequest(uri: "private:\(n)", appID: F.privateApp), on: agent.address).0 }
                }
                return await group.reduce(into: [LaunchStatus]()) { $0.append($1) }
            }
            let elapsed = Date().timeIntervalSince(started)
            #expect(statuses.count == 300 && statuses.allSatisfy { $0 == .deniedByRemoteSystem }, "\(Set(statuses))")
            let lines = agent.log.split(separator: "\n").filter { $0.contains("refused an anonymous launch") }
            // The refusal log's interval is 10 s: at most 5 lines in full in each.
            let bound = 5 * (Int(elapsed / 10) + 1)
            #expect(lines.count >= 1 && lines.count <= bound, "\(lines.count) lines in \(elapsed) s:\n\(lines.joined(separator: "\n"))")
            // The rest are counted in the refusal log's summary at the interval's end.
            let summarised = await eventually(within: 15) { agent.log.contains("launches refused to other accounts") }
            #expect(summarised, "\(agent.log)")
        }
    }
}
