import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto (Debian's 2.0.11) on a free port of 127.0.0.1, with its config in a
/// temporary directory; killed when released. `restart` brings it back on the same port.
final class MosquittoProcess: @unchecked Sendable {
    let port: Int
    let directory: URL
    private var process: Process?
    private let configPath: String
    let logPath: String

    /// `extraConfig` is appended to the listener's lines (TLS files, say).
    init(allowAnonymous: Bool = true, listenerConfig: String = "") throws {
        port = try freePort()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("baton-mqtt-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        configPath = directory.appendingPathComponent("mosquitto.conf").path
        logPath = directory.appendingPathComponent("mosquitto.log").path
        // `user root`: as root mosquitto would drop to its own user, who cannot read the temp dir's keys.
        let config = """
            user root
            persistence false
            log_dest stderr
            log_type all
            listener \(port) 127.0.0.1
            allow_anonymous \(allowAnonymous)
            \(listenerConfig)

            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", configPath]
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        self.process = process
        try waitForPort(port, within: 10, process: process, logPath: logPath)
    }

    /// SIGKILL: the broker vanishes without a word, as a crashed or unplugged one does.
    func kill() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    func restart() throws {
        kill()
        try start()
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A port nobody listens on now: bound to 0, read, closed.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestFailure("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Waits until something accepts on 127.0.0.1:`port`, or throws after `within` seconds.
func waitForPort(_ port: Int, within seconds: Double, process: Process, logPath: String) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        guard process.isRunning else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestFailure("mosquitto exited (\(process.terminationStatus)): \(log)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(fd)
        if result == 0 { return }
        usleep(20_000)
    }
    throw TestFailure("nothing accepts on port \(port) after \(seconds) s")
}
