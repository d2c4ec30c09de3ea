import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Private keys stay private: a device file written by export-device is 0600 whichever way it
/// is written, and a key in the configuration folder that others may read is refused, with
/// the fix in the message.
@Suite("Key files")
struct KeyFileTests {
    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test("export-device > FILE under umask 022 leaves the file 0600; --output FILE writes it 0600; both import")
    func exportedFileIsPrivate() async throws {
        let home = try ScriptDirectory()
        let environment = ["XDG_CONFIG_HOME": home.url.path]
        let baton = try BatonProcess.executable.get().path
        let redirected = try await BatonProcess.run(
            ["-c", "umask 022; exec '\(baton)' account export-device 'Living Room TV' > tv.baton"],
            program: URL(fileURLWithPath: "/bin/sh"), environment: environment, directory: home.url)
        #expect(redirected.exitCode == 0, "\(redirected)")
        let file = home.url.appendingPathComponent("tv.baton").path
        #expect(mode(file) == 0o600, "mode \(String(mode(file), radix: 8))")
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("PRIVATE KEY"))

        let written = try await BatonProcess.run(
            ["-c", "umask 022; exec '\(baton)' account export-device Kitchen --output kitchen.baton"],
            program: URL(fileURLWithPath: "/bin/sh"), environment: environment, directory: home.url)
        #expect(written.exitCode == 0, "\(written)")
        #expect(written.stdout == "", "\(written)")
        let kitchen = home.url.appendingPathComponent("kitchen.baton").path
        #expect(mode(kitchen) == 0o600, "mode \(String(mode(kitchen), radix: 8))")

        for name in ["tv.baton", "kitchen.baton"] {
            let device = try ScriptDirectory()
            try FileManager.default.copyItem(atPath: home.url.appendingPathComponent(name).path, toPath: device.url.appendingPathComponent(name).path)
            let imported = try await device.baton("account", "import", name, environment: ["XDG_CONFIG_HOME": device.url.path])
            #expect(imported.exitCode == 0, "\(imported)")
        }
    }

    @Test("import of a device file others may read is refused with exit 1 and 'chmod 600 FILE', nothing joined; after chmod 600 it imports")
    func openDeviceFileIsRefused() async throws {
        let home = try ScriptDirectory()
        let exported = try await home.baton("account", "export-device", "TV", "--output", "tv.baton", environment: ["XDG_CONFIG_HOME": home.url.path])
        #expect(exported.exitCode == 0, "\(exported)")
        let device = try ScriptDirectory()
        let file = device.url.appendingPathComponent("tv.baton").path
        try FileManager.default.copyItem(atPath: home.url.appendingPathComponent("tv.baton").path, toPath: file)
        #expect(chmod(file, 0o644) == 0)
        let environment = ["XDG_CONFIG_HOME": device.url.path]
        let refused = try await device.baton("account", "import", file, environment: environment)
        #expect(refused.exitCode == 1, "\(refused)")
        #expect(refused.stderr.contains("\(file) holds a private key and is open to others (mode 644)"), "\(refused)")
        #expect(refused.stderr.contains("chmod 600 \(file)"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: device.url.appendingPathComponent("baton/device-key.pem").path))
        #expect(chmod(file, 0o600) == 0)
        let imported = try await device.baton("account", "import", file, environment: environment)
        #expect(imported.exitCode == 0, "\(imported)")
    }

    @Test("a device or account key chmod'ed 0644 is refused with exit 1 and 'chmod 600 PATH'; after chmod 600 it works again")
    func openKeyIsRefused() async throws {
        let dir = try ScriptDirectory()
        let environment = ["XDG_CONFIG_HOME": dir.url.path]
        let first = try await dir.baton("account", "show", environment: environment)
        #expect(first.exitCode == 0, "\(first)")
        for name in ["device-key.pem", "account-key.pem"] {
            let key = dir.url.appendingPathComponent("baton/\(name)").path
            #expect(chmod(key, 0o644) == 0)
            let refused = try await dir.baton("account", "show", environment: environment)
            #expect(refused.exitCode == 1, "\(refused)")
            #expect(refused.stdout == "", "\(refused)")
            #expect(refused.stderr.contains("\(key) holds a private key and is open to others (mode 644)"), "\(refused)")
            #expect(refused.stderr.contains("chmod 600 \(key)"), "\(refused)")
            // A script that would reach devices with it fails the same way, rather than use it.
            let run = try await dir.baton("devices", environment: environment)
            #expect(run.exitCode != 0, "\(run)")
            #expect(run.stderr.contains("chmod 600 \(key)"), "\(run)")
            #expect(chmod(key, 0o600) == 0)
            let fixed = try await dir.baton("account", "show", environment: environment)
            #expect(fixed.exitCode == 0, "\(fixed)")
        }
    }
}
