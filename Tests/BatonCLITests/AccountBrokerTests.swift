import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `baton account broker`, `--broker`/`--no-broker`/`BATON_BROKER`, and the broker a device
/// file carries.
@Suite("baton account broker")
struct AccountBrokerTests {
    func json(_ r: BatonResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r)")
    }

    @Test func setShowAndClearTheAccountsBroker() async throws {
        let home = try ScriptDirectory()
        let env = ["XDG_CONFIG_HOME": home.url.path]
        let none = try await home.baton("account", "broker", environment: env)
        #expect(none.exitCode == 0 && none.stdout.contains("broker: none"), "\(none)")

        let set = try await home.baton("account", "broker", "mqtts://Hub.Home", environment: env)
        #expect(set.exitCode == 0, "\(set)")
        #expect(set.stdout.contains("mqtts://hub.home:8883"), "\(set)")
        #expect(set.stderr.isEmpty, "\(set)")
        var info = stat()
        #expect(stat(home.url.path + "/baton/broker.json", &info) == 0 && info.st_mode & 0o777 == 0o600)

        let shown = try await home.baton("account", "broker", environment: env)
        #expect(shown.stdout.contains("broker: mqtts://hub.home:8883 (from the account)"), "\(shown)")
        #expect(shown.stdout.contains("the account's CA"), "\(shown)")
        let object = try json(try await home.baton("account", "broker", "--json", environment: env))
        let effective = try #require(object["effective"] as? [String: Any])
        #expect(effective["url"] as? String == "mqtts://hub.home:8883")
        #expect(effective["origin"] as? String == "account")
        #expect(effective["plaintext"] as? Bool == false)
        #expect(effective["ca"] as? String == "account")
        #expect((object["account"] as? [String: Any])?["url"] as? String == "mqtts://hub.home:8883")

        let cleared = try await home.baton("account", "broker", "--clear", environment: env)
        #expect(cleared.exitCode == 0 && cleared.stdout.contains("removed"), "\(cleared)")
        #expect(!FileManager.default.fileExists(atPath: home.url.path + "/baton/broker.json"))
        let after = try json(try await home.baton("account", "broker", "--json", environment: env))
        #expect(after["effective"] is NSNull && after["origin"] as? String == "none", "\(after)")
    }

    @Test func aPlaintextBrokerIsAllowedWithAWarningAndItsOwnCAIsKept() async throws {
        let home = try ScriptDirectory()
        let env = ["XDG_CONFIG_HOME": home.url.path]
        let plain = try await home.baton("account", "broker", "mqtt://10.0.0.2", environment: env)
        #expect(plain.exitCode == 0 && plain.stdout.contains("mqtt://10.0.0.2:1883"), "\(plain)")
        #expect(plain.stderr.contains("plaintext") && plain.stderr.contains("trust"), "\(plain)")

        // Any PEM certificate serves as a CA file here: the account's own.
        _ = try await BrokerConfigTests.accountJSON(home)
        let ca = try String(contentsOfFile: home.url.path + "/baton/account.pem", encoding: .utf8)
        try home.write("their-ca.pem", ca)
        let own = try await home.baton("account", "broker", "mqtts://[fd00::1]:8884", "--ca", "their-ca.pem", environment: env)
        #expect(own.exitCode == 0 && own.stdout.contains("mqtts://[fd00::1]:8884"), "\(own)")
        let object = try json(try await home.baton("account", "broker", "--json", environment: env))
        #expect((object["effective"] as? [String: Any])?["ca"] as? String == ca, "\(object)")

        try home.write("junk.pem", "not a certificate")
        let junk = try await home.baton("account", "broker", "mqtts://hub.home", "--ca", "junk.pem", environment: env)
        #expect(junk.exitCode == 1 && junk.stderr.contains("no PEM certificate"), "\(junk)")
    }

    @Test(arguments: ["http://hub.home", "mqtts://", "mqtts://hub.home:0", "mqtts://hub.home:99999", "mqtts://user@hub.home",
                      "mqtts://hub.home/path", "mqtts://::1:8883", "mqtts://hub home", "hub.home:8883"])
    func aBadURLIsAUsageErrorThatShowsTheForm(_ url: String) async throws {
        let home = try ScriptDirectory()
        let r = try await home.baton("account", "broker", url, environment: ["XDG_CONFIG_HOME": home.url.path])
        #expect(r.exitCode == 2, "\(r)")
        #expect(r.stderr.contains("mqtts://HOST:PORT"), "\(r)")
        #expect(!FileManager.default.fileExists(atPath: home.url.path + "/baton/broker.json"))
    }

    @Test func noBrokerWinsOverBrokerWhichWinsOverTheEnvironmentWhichWinsOverTheAccount() async throws {
        let home = try ScriptDirectory()
        try home.write("noop.lua", "")
        var env = ["XDG_CONFIG_HOME": home.url.path]
        #expect(try await home.baton("account", "broker", "mqtts://account.home", environment: env).exitCode == 0)
        func chosen(_ flags: [String]) async throws -> String {
            let r = try await BatonProcess.run(["run", "--verbose"] + flags + ["noop.lua"], environment: env, directory: home.url)
            #expect(r.exitCode == 0, "\(r)")
            return r.stderrLines.first { $0.contains("broker: ") } ?? r.stderr
        }
        #expect(try await chosen([]).contains("mqtts://account.home:8883 (from the account)"))
        env["BATON_BROKER"] = "mqtts://env.home:1234"
        #expect(try await chosen([]).contains("mqtts://env.home:1234 (from BATON_BROKER)"))
        let shown = try await home.baton("account", "broker", environment: env)
        #expect(shown.stdout.contains("broker: mqtts://env.home:1234 (from BATON_BROKER)"), "\(shown)")
        #expect(shown.stdout.contains("account's broker: mqtts://account.home:8883"), "\(shown)")
        #expect(try await chosen(["--broker", "mqtt://flag.home"]).contains("mqtt://flag.home:1883 (from --broker)"))
        #expect(try await chosen(["--no-broker"]).contains("none (--no-broker)"))
        env["BATON_BROKER"] = "off"
        #expect(try await chosen([]).contains("none (BATON_BROKER=off)"))

        // Bad values are usage errors, wherever they come from; both flags at once too.
        env["BATON_BROKER"] = "tcp://nowhere"
        let badEnv = try await BatonProcess.run(["devices", "--json"], environment: env, directory: home.url)
        #expect(badEnv.exitCode == 2 && badEnv.stderr.contains("BATON_BROKER") && badEnv.stderr.contains("mqtts://HOST:PORT"), "\(badEnv)")
        env["BATON_BROKER"] = nil
        for args in [["agent", "--broker", "mqtts://a:b"], ["launch", "--broker", "x", "tv", "https://example.com"],
                     ["batch", "--broker", "mqtts://", "noop.lua", "--input", "items.json"], ["describe", "--broker", "mqtts://h/x", "tv"],
                     ["handoff", "--broker", "mqtt://h:65536", "tv", "radio"], ["devices", "--broker", "mqtts://u@h"]] {
            let r = try await BatonProcess.run(args, environment: env, directory: home.url)
            #expect(r.exitCode == 2 && r.stderr.contains("mqtts://HOST:PORT"), "\(args): \(r)")
        }
        let both = try await BatonProcess.run(["send", "--no-broker", "--broker", "mqtts://a", "tv", "svc", "--app", "org.example.app"], environment: env, directory: home.url)
        #expect(both.exitCode == 2 && both.stderr.contains("not both"), "\(both)")
    }

    @Test func anExportedDeviceFileCarriesTheBrokerAndImportStoresIt() async throws {
        let home = try ScriptDirectory()
        let tv = try ScriptDirectory()
        let asHome = ["XDG_CONFIG_HOME": home.url.path]
        let asTV = ["XDG_CONFIG_HOME": tv.url.path]
        #expect(try await home.baton("account", "broker", "mqtts://hub.home:8884", environment: asHome).exitCode == 0)
        let exported = try await home.baton("account", "export-device", "TV", "--output", tv.url.path + "/tv.baton", environment: asHome)
        #expect(exported.exitCode == 0, "\(exported)")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: tv.url.appendingPathComponent("tv.baton"))) as? [String: Any])
        #expect((file["broker"] as? [String: Any])?["url"] as? String == "mqtts://hub.home:8884")
        #expect(file["version"] as? Int == 1, "older Batons still read it")

        // The TV had a broker of its own old account: it is moved aside with that account.
        #expect(try await tv.baton("account", "broker", "mqtt://old.home", environment: asTV).exitCode == 0)
        let imported = try await tv.baton("account", "import", "tv.baton", environment: asTV)
        #expect(imported.exitCode == 0 && imported.stdout.contains("mqtts://hub.home:8884"), "\(imported)")
        let shown = try await tv.baton("account", "broker", environment: asTV)
        #expect(shown.stdout.contains("broker: mqtts://hub.home:8884 (from the account)"), "\(shown)")

        // A device file without a broker (an account without one, or an older Baton) imports as before.
        #expect(try await home.baton("account", "broker", "--clear", environment: asHome).exitCode == 0)
        let plain = try await home.baton("account", "export-device", "Radio", "--output", tv.url.path + "/radio.baton", environment: asHome)
        #expect(plain.exitCode == 0, "\(plain)")
        let radioFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: tv.url.appendingPathComponent("radio.baton"))) as? [String: Any])
        #expect(radioFile["broker"] == nil)
        let again = try await tv.baton("account", "import", "radio.baton", environment: asTV)
        #expect(again.exitCode == 0, "\(again)")
        let none = try await tv.baton("account", "broker", environment: asTV)
        #expect(none.stdout.contains("broker: none"), "\(none)")
    }

    @Test func deviceCertificatesNameTheDeviceByItsIdNotItsName() async throws {
        let home = try ScriptDirectory()
        let tv = try ScriptDirectory()
        let exported = try await home.baton("account", "export-device", "Living Room TV", "--output", tv.url.path + "/tv.baton", environment: ["XDG_CONFIG_HOME": home.url.path])
        #expect(exported.exitCode == 0, "\(exported)")
        #expect(try await tv.baton("account", "import", "tv.baton", environment: ["XDG_CONFIG_HOME": tv.url.path]).exitCode == 0)
        let account = try await BrokerConfigTests.accountJSON(tv)
        let device = try #require(account["device"] as? [String: Any])
        let id = try #require(device["id"] as? String)
        #expect(device["certificate_subject"] as? String == "CN=\(id),O=Baton", "\(device)")
        let subject = try await BatonProcess.run(
            ["x509", "-in", tv.url.path + "/baton/device.pem", "-noout", "-subject"], program: URL(fileURLWithPath: "/usr/bin/openssl"))
        #expect(subject.stdout.contains("CN = \(id)") && !subject.stdout.contains("Living Room"), "\(subject)")
    }
}
