import BatonClient
import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton account revoke` pushes the new list at once to the account's agents that discovery
/// finds: a quiet agent, which no other device of the account meets, drops the revoked
/// device's open channel and refuses it from then on, without waiting for anyone to connect.
@Suite("Revocation pushed", .timeLimit(.minutes(3)))
struct RevocationPushTests {
    typealias F = AccountFixtures

    /// A loopback port nothing listens on now.
    static func unusedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test("revoke pushes the list to the agents found (--peer here): the TV drops the revoked phone's open channel and refuses it; the output names the agents reached")
    func revokeReachesQuietAgents() async throws {
        let account = try TestAccount()
        let phone = try account.device(named: "lost phone")
        let tablet = try account.device(named: "tablet")
        let tv = try await AgentProcess.start(config: F.config, account: account)
        let kitchen = try await AgentProcess.start(config: F.config, account: account)
        let phoneClient = makeClient(security: phone.security)
        defer { phoneClient.shutdown() }
        let (channel, openStatus, openDetail) = await phoneClient.openService("peek", app: F.privateApp, on: tv.address)
        let held = try #require(channel, "\(openStatus): \(openDetail)")

        // A third --peer where nothing listens: said not reached.
        let nowhere = Self.unusedPort()
        let peers = ["--no-mdns", "--peer", tv.address.description, "--peer", kitchen.address.description, "--peer", "127.0.0.1:\(nowhere)"]
        let revoked = try await runBaton(["account", "revoke", "lost phone"] + peers, xdg: account.home.path)
        #expect(revoked.code == 0, "\(revoked)")
        let lines = revoked.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "revoked lost phone (\(phone.id)); revocation list version 1", "\(revoked)")
        for agent in [tv, kitchen] {
            #expect(lines.contains("pushed to: \(agent.name) (\(agent.id)) at \(agent.address.description)"), "\(revoked)")
        }
        let unreached = lines.filter { $0.hasPrefix("not reached: ") }
        #expect(unreached.count == 1 && unreached.first?.contains("127.0.0.1:\(nowhere)") == true, "\(revoked)")

        // The TV dropped the phone's open channel on its own (no other device met it).
        let dropped = await eventually(within: 5) { held.closedStatus != nil }
        #expect(dropped, "the revoked phone's channel stayed open; the TV's log:\n\(tv.log)")
        #expect(tv.log.contains("adopted a newer revocation list") && tv.log.contains("dropping a revoked caller"), "\(tv.log)")
        for agent in [tv, kitchen] {
            let refused = try await runBaton(["launch", agent.address.description, "public:x"], xdg: phone.home.path)
            #expect(refused.code == 77, "\(refused)")
            #expect(refused.stdout.contains("the agent refused this device's certificate"), "\(refused)")
            let served = try await runBaton(["launch", agent.address.description, "private:after"], xdg: tablet.home.path)
            #expect(served.code == 0, "\(served)")
        }

        // --json names them too.
        let old = try account.device(named: "old tablet")
        let second = try await runBaton(["account", "revoke", old.id, "--json"] + peers, xdg: account.home.path)
        #expect(second.code == 0, "\(second)")
        let object = second.json()
        #expect(object?["revocation_list_version"] == .int(2), "\(second)")
        let pushed = Set((object?["pushed"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue })
        #expect(pushed == [tv.id, kitchen.id], "\(second)")
        #expect(object?["not_reached"]?.arrayValue?.isEmpty == true, "\(second)")
        #expect(object?["problems"]?.arrayValue?.count == 1, "\(second)")
        let oldRefused = try await runBaton(["launch", tv.address.description, "public:x"], xdg: old.home.path)
        #expect(oldRefused.code == 77, "\(oldRefused)")

        #expect(await tv.stop() == 0, "\(tv.log)")
        #expect(await kitchen.stop() == 0, "\(kitchen.log)")
    }
}
