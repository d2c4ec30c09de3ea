@testable import BatonAgent
import BatonCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

/// A real headless Kodi 20 (see ../shared/reference/renderers.md): a pulseaudio with a null
/// sink on a socket of its own (Kodi stays at 0:00 without an audio sink), then
/// `xvfb-run -a kodi --standalone --windowing=x11` with its home in a temporary folder whose
/// settings turn on remote control by programs (`services.esenabled`, which opens the JSON-RPC
/// TCP port) and the web server (no authentication), each on a port of its own
/// (`advancedsettings.xml`'s `jsonrpc/tcpport`), so suites can run side by side. Everything
/// runs in one process group, killed at the end; the folder (home, media, sockets, logs) is
/// removed.
final class RunningKodi: @unchecked Sendable {
    /// The folder of this Kodi's home, media and sockets.
    let directory: String
    /// Its JSON-RPC TCP port on 127.0.0.1.
    let port: Int
    /// The sweep it plays (see ``TestMedia``).
    let media: TestMedia
    /// The process group of pulseaudio, xvfb-run, Xvfb and Kodi.
    private let group: pid_t
    private let children: [pid_t]

    /// The Kodi of the suite running now (see ``KodiScope``).
    @TaskLocal static var current: RunningKodi?

    private init(directory: String, port: Int, media: TestMedia, group: pid_t, children: [pid_t]) {
        self.directory = directory
        self.port = port
        self.media = media
        self.group = group
        self.children = children
    }

    /// Starts one on `port` (nil: a free one) playing `media` (nil: a new sweep), and waits
    /// (60 s at most: Kodi starts slowly on a loaded machine) until its JSON-RPC answers.
    static func start(port given: Int? = nil, media known: TestMedia? = nil) async throws -> RunningKodi {
        let media: TestMedia
        if let known { media = known } else { media = try await TestMedia.make() }
        let directory = NSTemporaryDirectory() + "baton-kodi-\(UUID().uuidString)"
        let home = directory + "/home"
        let userdata = home + "/.kodi/userdata"
        try FileManager.default.createDirectory(atPath: userdata, withIntermediateDirectories: true)
        let port = try given ?? freePort()
        let webPort = try freePort()
        let eventPort = Int.random(in: 20000...30000)
        try """
            <settings version="2">
                <setting id="services.webserver">true</setting>
                <setting id="services.webserverport">\(webPort)</setting>
                <setting id="services.webserverauthentication">false</setting>
                <setting id="services.esenabled">true</setting>
                <setting id="services.esport">\(eventPort)</setting>
                <setting id="services.zeroconf">false</setting>
                <setting id="services.upnp">false</setting>
            </settings>
            """.write(toFile: userdata + "/guisettings.xml", atomically: true, encoding: .utf8)
        try """
            <advancedsettings version="1.0">
                <jsonrpc><tcpport>\(port)</tcpport></jsonrpc>
            </advancedsettings>
            """.write(toFile: userdata + "/advancedsettings.xml", atomically: true, encoding: .utf8)
        let socket = directory + "/pulse.sock"
        let environment = ["HOME=" + home, "XDG_RUNTIME_DIR=" + directory, "XDG_CONFIG_HOME=" + home + "/.config"]
        let pulse = try spawnChild(
            ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "-L", "module-null-sink sink_name=nullsink",
             "-L", "module-native-protocol-unix auth-anonymous=1 socket=\(socket)"],
            output: directory + "/pulse.log", environment: environment, group: 0)
        var kodi: RunningKodi? = RunningKodi(directory: directory, port: port, media: media, group: pulse, children: [pulse])
        do {
            let deadline = Date().addingTimeInterval(20)
            while !FileManager.default.fileExists(atPath: socket) {
                guard Date() < deadline else { throw KodiError.closed("pulseaudio made no socket within 20 s: \(kodi?.log("pulse.log") ?? "")") }
                try await Task.sleep(for: .milliseconds(50))
            }
            // Kodi's own script asks for unlimited core dumps (when gdb is there), and a Kodi
            // that is stopped while it starts can crash: no core, and in the folder if any.
            let xvfb = try spawnChild(
                ["sh", "-c", #"cd "$0" && ulimit -c 0 && ulimit -Hc 0 && exec xvfb-run -a kodi --standalone --windowing=x11"#, directory],
                output: directory + "/kodi.out", environment: environment + ["KODI_AE_SINK=PULSE", "PULSE_SERVER=unix:" + socket], group: pulse)
            kodi = RunningKodi(directory: directory, port: port, media: media, group: pulse, children: [pulse, xvfb])
            try await kodi?.waitUntilListening(within: 60)
        } catch {
            await kodi?.stop()
            throw error
        }
        return kodi!
    }

    /// Waits until a connection's `JSONRPC.Ping` is answered.
    private func waitUntilListening(within seconds: Double) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        try await withLoop { loop in
            while true {
                if let connection = try? await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop, timeout: .seconds(2)).get() {
                    connection.close()
                    return
                }
                guard Date() < deadline else {
                    throw KodiError.closed("Kodi did not answer on \(port) within \(Int(seconds)) s: \(log("kodi.out"))\n\(log("home/.kodi/temp/kodi.log"))")
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The last lines of a log under the folder, for failures.
    func log(_ name: String) -> String {
        let text = (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }

    /// Kills the whole group at once, as a crash would (SIGKILL), and reaps what it started.
    func kill() async {
        _ = Glibc.kill(-group, SIGKILL)
        await reap()
    }

    /// Stops the group: Kodi asked to quit (`Application.Quit`; up to 10 s for it to be gone),
    /// then SIGTERM to all, SIGKILL after 5 s; and removes the folder (and the media).
    func stop() async {
        try? await withLoop { loop in
            guard let connection = try? await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop, timeout: .seconds(2)).get() else { return }
            _ = try? await connection.call("Application.Quit", timeout: .seconds(2)).get()
            connection.close()
            // xvfb-run ends with its Kodi.
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, let xvfb = children.dropFirst().first {
                var status: Int32 = 0
                let got = waitpid(xvfb, &status, WNOHANG)
                if got == xvfb || got < 0 { break }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        _ = Glibc.kill(-group, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, Glibc.kill(-group, 0) == 0 {
            // Its own children are reaped here, or they would linger as zombies of the group.
            for pid in children {
                var status: Int32 = 0
                _ = waitpid(pid, &status, WNOHANG)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        _ = Glibc.kill(-group, SIGKILL)
        await reap()
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: media.directory)
    }

    /// Waits (10 s at most) for the children it started to exit.
    private func reap() async {
        let deadline = Date().addingTimeInterval(10)
        var left = Set(children)
        while !left.isEmpty, Date() < deadline {
            for pid in left {
                var status: Int32 = 0
                let got = waitpid(pid, &status, WNOHANG)
                if got == pid || got < 0 { left.remove(pid) }
            }
            if !left.isEmpty { try? await Task.sleep(for: .milliseconds(20)) }
        }
    }
}


/// Runs a suite around one real Kodi (``RunningKodi/current`` inside it), started before its
/// first test and stopped after its last: Kodi takes seconds to start.
struct KodiScope: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let kodi = try await RunningKodi.start()
        do {
            try await RunningKodi.$current.withValue(kodi) { try await function() }
        } catch {
            await kodi.stop()
            throw error
        }
        await kodi.stop()
    }
}

extension Trait where Self == KodiScope {
    /// One real Kodi for the whole suite.
    static var withKodi: KodiScope { KodiScope() }
}

/// The suite's Kodi, or a failure saying there is none.
func suiteKodi() throws -> RunningKodi {
    try #require(RunningKodi.current, "no Kodi: the suite needs the .withKodi trait")
}

/// A ``KodiPlayer`` of the suite's Kodi on a loop of its own, with generous deadlines (a loaded
/// machine starves Kodi), and a connection of the test's own to read Kodi on; both closed after.
func withKodiPlayer(_ kodi: RunningKodi, _ body: (KodiPlayer, KodiConnection) async throws -> Void) async throws {
    try await withLoop { loop in
        let player = KodiPlayer(host: "127.0.0.1", port: kodi.port, on: loop, logger: Logger(label: "kodi-test"))
        player.callTimeout = .seconds(20)
        player.startTimeout = .seconds(20)
        let own = try await KodiConnection.connect(host: "127.0.0.1", port: kodi.port, on: loop, timeout: .seconds(20)).get()
        do {
            try await body(player, own)
        } catch {
            own.close()
            try? await player.shutdown().get()
            throw error
        }
        own.close()
        try await player.shutdown().get()
    }
}
