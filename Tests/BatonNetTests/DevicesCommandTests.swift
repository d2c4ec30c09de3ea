import BatonCore
import Testing

/// `baton devices` and names as DEVICE, with static peers (mDNS has its own namespace tests).
@Suite("baton devices and devices by name, through --peer")
struct DevicesCommandTests {
    @Test("the table, --json with filters, and an unreachable peer on stderr")
    func list() async throws {
        try await withAgent { agent in
            let peer = agent.address.description
            let table = try await runBaton(["devices", "--peer", peer, "--peer", "127.0.0.1:1", "--connect-timeout", "500ms"])
            #expect(table.code == 0, "\(table)")
            #expect(table.stdout.hasPrefix("NAME"), "\(table)")
            #expect(table.stdout.contains(agent.name) && table.stdout.contains(agent.id) && table.stdout.contains(peer), "\(table)")
            #expect(table.stderr.contains("peer 127.0.0.1:1 cannot be reached"), "\(table)")
            // Each row says how the device is reached and every route to it.
            #expect(table.stdout.contains("TRANSPORT") && table.stdout.contains("ROUTES"), "\(table)")
            let row = table.stdout.split(separator: "\n").first { $0.contains(agent.id) } ?? ""
            #expect(row.contains(" local ") && row.contains(peer), "\(table)")

            let json = try await runBaton(["devices", "--peer", peer, "--json", "--kind", "phone"])
            #expect(json.stdout == "[]\n", "\(json)")
            // --required: none matching is not_found (68); one matching is 0.
            let none = try await runBaton(["devices", "--peer", peer, "--json", "--kind", "phone", "--required"])
            #expect(none.code == 68 && none.stdout == "[]\n" && none.stderr.contains("no device matches"), "\(none)")
            let some = try await runBaton(["devices", "--peer", peer, "--required"])
            #expect(some.code == 0, "\(some)")
            let all = try await runBaton(["devices", "--peer", peer, "--json"])
            guard case .array(let devices)? = all.json(), case .object(let first)? = devices.first else {
                Issue.record("not a JSON array: \(all)")
                return
            }
            #expect(devices.count == 1)
            #expect(first.first { $0.key == "id" }?.value == .string(agent.id))
            #expect(first.first { $0.key == "sources" }?.value == .array([.string("peer")]))
            #expect(first.first { $0.key == "transport" }?.value == .string("local"))
            #expect(first.first { $0.key == "routes" }?.value == .array([.object([.init("kind", .string("tcp")), .init("address", .string(peer))])]), "\(all)")
            // Reached on the LAN, so not through a broker.
            let cloud = try await runBaton(["devices", "--peer", peer, "--json", "--transport", "cloud"])
            #expect(cloud.code == 0 && cloud.stdout == "[]\n", "\(cloud)")
            // Of this account, and proven so (enrolled, and its Describe came over TLS).
            #expect(first.first { $0.key == "proven" }?.value == .bool(true), "\(all)")

            let bad = try await runBaton(["devices", "--kind", "toaster"])
            #expect(bad.code == 2 && bad.stderr.contains("--kind 'toaster'"), "\(bad)")
        }
    }

    @Test("launch and describe take the device's name or id")
    func byName() async throws {
        try await withAgent { agent in
            let peer = agent.address.description
            let byName = try await runBaton(["describe", agent.name, "--peer", peer, "--json"])
            #expect(byName.code == 0 && byName.stdout.contains(agent.id), "\(byName)")
            let byID = try await runBaton(["launch", agent.id, "media:one", "--app", Fixtures.player, "--peer", peer])
            #expect(byID.code == 0 && byID.stdout == "success\n", "\(byID)")
        }
    }
}
