import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Devices by name, as a user types them: in any case, a known device that is off told from a
/// name nobody knows, and a device reached before found where it was, without letting whoever
/// sits at that address in. Names carry a random tag: the test account's folder (its pins and
/// remembered routes) is shared by every test.
@Suite("Device names: any case, known but off, did you mean, remembered routes", .timeLimit(.minutes(4)))
struct DeviceNameTests {
    static func tag() -> String { String(UUID().uuidString.prefix(6)).lowercased() }

    @Test("a name in any case reaches the device; switched off it is unavailable (69); a misspelt name is not_found (68) with did you mean")
    func namesCaseAndKnownButOff() async throws {
        try await NamespacePair.with { pair in
            let name = "Den TV \(Self.tag())"
            let tv = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: name, kind: "tv"))
            try await MDNSFixtures.waitAdvertised([tv])

            for (n, spelt) in [name.lowercased(), name.uppercased(), name].enumerated() {
                let launched = try await pair.baton(in: pair.b, ["launch", spelt, "media:\(n)", "--app", MDNSFixtures.player])
                #expect(launched.code == 0 && launched.stdout == "success\n", "\(spelt): \(launched)")
            }
            #expect(tv.home.read("launched") == "media:0\nmedia:1\nmedia:2\n")
            // Reached before: found where it was, without mDNS.
            let remembered = try await pair.baton(in: pair.b, ["launch", name.lowercased(), "media:remembered", "--app", MDNSFixtures.player, "--no-mdns"])
            #expect(remembered.code == 0 && remembered.stdout == "success\n", "\(remembered)")
            // A device table prints as its name.
            let printed = try await pair.baton(in: pair.b, ["run", "-e", "print(tostring(baton.find('\(name.uppercased())', {required = true})))"])
            #expect(printed.code == 0 && printed.stdout == "\(name)\n", "\(printed)")

            #expect(await tv.stop(SIGTERM) == 0, "\(tv.log)")
            for command in [["launch", name, "media:off", "--app", MDNSFixtures.player], ["describe", name.uppercased()]] {
                let off = try await pair.baton(in: pair.b, command)
                #expect(off.code == 69, "\(command): \(off)")
                #expect(off.stderr.contains("remote_system_unavailable") && off.stderr.contains("answers nowhere"), "\(off)")
                #expect(!off.stderr.contains("not_found"), "\(off)")
            }
            let script = """
                local dev, status, detail = baton.find("\(name.lowercased())", {timeout = 1})
                print(dev, status)
                io.stderr:write(tostring(detail), "\\n")
                baton.find("\(name)", {timeout = 1, required = true})
                """
            let lua = try await pair.baton(in: pair.b, ["run", "-e", script])
            #expect(lua.code == 69 && lua.stdout == "nil\tremote_system_unavailable\n", "\(lua)")
            #expect(lua.stderr.contains("answers nowhere"), "\(lua)")

            let typo = String(name.dropLast()) + (name.last == "x" ? "y" : "x")
            for command in [["launch", typo, "media:typo", "--app", MDNSFixtures.player], ["describe", typo]] {
                let unknown = try await pair.baton(in: pair.b, command)
                #expect(unknown.code == 68, "\(command): \(unknown)")
                #expect(unknown.stderr.contains("not_found") && unknown.stderr.contains("did you mean \"\(name)\""), "\(unknown)")
            }
            let nobody = try await pair.baton(in: pair.b, ["launch", "qwzx\(Self.tag())", "media:x", "--app", MDNSFixtures.player])
            #expect(nobody.code == 68 && nobody.stderr.contains("not_found") && !nobody.stderr.contains("did you mean"), "\(nobody)")
            #expect(tv.home.read("launched") == "media:0\nmedia:1\nmedia:2\nmedia:remembered\n")
        }
    }

    @Test("a device enrolled in the account but never seen is unavailable (69) by its name in any case, not unknown")
    func enrolledNeverSeen() async throws {
        let name = "Garage TV \(Self.tag())"
        let home = try TemporaryDirectory("baton-enrolled-unseen")
        let id = try TestAccount.shared.enrol(xdg: home.path, name: name)
        for device in [name, name.lowercased(), id] {
            let result = try await runBaton(["launch", device, "media:x", "--app", MDNSFixtures.player, "--no-mdns", "--connect-timeout", "500ms"])
            #expect(result.code == 69, "\(device): \(result)")
            #expect(result.stderr.contains("remote_system_unavailable") && result.stderr.contains("answers nowhere"), "\(result)")
        }
    }

    @Test("an agent of another account at a device's remembered address, posing as its id, gets nothing: unavailable (69), and the device back is reached")
    func rememberedRouteLetsNoImpostorIn() async throws {
        try await NamespacePair.with { pair in
            let name = "Attic TV \(Self.tag())"
            let home = try AgentHome(in: pair.directory)
            let tv = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: name, kind: "tv"), home: home)
            try await MDNSFixtures.waitAdvertised([tv])
            let first = try await pair.baton(in: pair.b, ["launch", name, "media:first", "--app", MDNSFixtures.player])
            #expect(first.code == 0 && first.stdout == "success\n", "\(first)")
            #expect(await tv.stop(SIGKILL) == 128 + SIGKILL)

            // A stranger's agent where the TV was reached, on its port, with its id and name.
            let impostor = try await pair.agent(
                in: pair.a, config: MDNSFixtures.config(name: name, kind: "tv"), arguments: ["--listen", "0.0.0.0:\(tv.port)"],
                home: try ImpostorTests.impostorHome(in: pair, posingAs: tv.id))
            #expect(impostor.address == tv.address && impostor.id == tv.id, "\(impostor.address) \(impostor.id)")
            try await MDNSFixtures.waitAdvertised([impostor])
            for arguments in [[name, "--no-mdns"], [name], [tv.id, "--no-mdns"], [name.uppercased()]] {
                let refused = try await pair.baton(in: pair.b, ["launch", arguments[0], "media:secret", "--app", MDNSFixtures.player] + arguments.dropFirst())
                #expect(refused.code == 69 && refused.stderr.contains("answers nowhere"), "\(arguments): \(refused)")
            }
            #expect(impostor.home.read("launched") == nil, "the impostor received \(impostor.home.read("launched") ?? "")")
            #expect(await impostor.stop(SIGKILL) == 128 + SIGKILL)

            // The TV back, on another port: found by name again, and only it.
            let back = try await pair.agent(in: pair.a, config: MDNSFixtures.config(name: name, kind: "tv"), home: home)
            try await MDNSFixtures.waitAdvertised([back])
            let again = try await pair.baton(in: pair.b, ["launch", name.lowercased(), "media:back", "--app", MDNSFixtures.player])
            #expect(again.code == 0 && again.stdout == "success\n", "\(again)")
            #expect(back.home.read("launched") == "media:first\nmedia:back\n")
            #expect(impostor.home.read("launched") == nil)
        }
    }
}
