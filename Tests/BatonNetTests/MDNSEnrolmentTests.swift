import BatonCore
import Foundation
import Testing

/// Enrolling a device the way a user does on a LAN: `baton account invite` on the device that
/// made the account, `baton account join CODE` on the new one, which finds the inviting agent
/// over mDNS (no address given), on two hosts in network namespaces.
@Suite("Joining an account over the LAN", .serialized, .timeLimit(.minutes(2)))
struct MDNSEnrolmentTests {
    @Test("join finds the inviting agent over mDNS; the new device is then same_account, the code spent")
    func joinOverMDNS() async throws {
        try await NamespacePair.with { pair in
            // The laptop made an account of its own (not the shared test account) and runs its agent.
            let laptopHome = try AgentHome(in: pair.directory, account: nil)
            let laptop = try await pair.agent(in: pair.a, name: "Laptop", kind: "laptop", home: laptopHome)
            let laptopXDG = laptopHome.path + "/xdg"
            try await MDNSFixtures.waitAdvertised([laptop])

            let invite = try await pair.baton(in: pair.a, ["account", "invite", "--expires", "5m", "--json"], xdg: laptopXDG)
            #expect(invite.code == 0, "\(invite)")
            let code = try #require(try JSON.parse(invite.stdout)["code"]?.stringValue, "\(invite)")

            // The TV, on the other host, with a first-use account of its own.
            let tvHome = try AgentHome(in: pair.directory, account: nil)
            let tvXDG = tvHome.path + "/xdg"
            let joined = try await pair.baton(in: pair.b, ["account", "join", code, "--name", "TV", "--json"], xdg: tvXDG)
            #expect(joined.code == 0, "\(joined)")
            let account = try JSON.parse(joined.stdout)
            let laptopAccount = try await pair.baton(in: pair.a, ["account", "show", "--json"], xdg: laptopXDG)
            let fingerprint = try JSON.parse(laptopAccount.stdout)["fingerprint"]
            #expect(account["account"] == fingerprint, "\(joined)")
            #expect(account["agent"]?.stringValue?.hasPrefix("10.77.0.1:") == true, "found over mDNS: \(joined)")
            #expect(!joined.stdout.contains(code) && !joined.stderr.contains(code), "the code is not echoed")

            // The TV's agent now serves the laptop as one of its own: launch by name works.
            let tv = try await pair.agent(in: pair.b, config: MDNSFixtures.config(name: "TV", kind: "tv"), home: tvHome)
            try await MDNSFixtures.waitAdvertised([tv])
            let launched = try await pair.baton(in: pair.a, ["launch", "TV", "media:handed-over"], xdg: laptopXDG)
            #expect(launched.code == 0 && launched.stdout == "success\n", "\(launched)")
            #expect(tvHome.read("launched") == "media:handed-over\n")

            // The code worked once: a third device is refused, and the laptop's agent says why.
            let thirdHome = try AgentHome(in: pair.directory, account: nil)
            let again = try await pair.baton(in: pair.b, ["account", "join", code, "--from", laptop.address], xdg: thirdHome.path + "/xdg")
            #expect(again.code == 1, "\(again)")
            #expect(again.stderr.contains("already been used"), "\(again)")
            #expect(laptop.log.contains("refused a device joining the account"), "\(laptop.log)")
            #expect(!laptop.log.contains(code), "the code never reaches the log")
        }
    }
}
