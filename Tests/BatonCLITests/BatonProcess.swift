import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one run of the `baton` executable left behind.
struct BatonResult: Sendable, CustomStringConvertible {
    var exitCode: Int32
    var stdout: String
    var stderr: String
    /// True when the wall-clock guard had to kill the child (or its pipes never closed).
    var killedByGuard: Bool

    /// Standard error split into lines, without the empty piece after the last newline.
    var stderrLines: [String] { Self.lines(stderr) }
    /// Standard output split into lines, without the empty piece after the last newline.
    var stdoutLines: [String] { Self.lines(stdout) }

    static func lines(_ text: String) -> [String] {
        var parts = text.components(separatedBy: "\n")
        if parts.last == "" { parts.removeLast() }
        return parts
    }

    var description: String {
        "exit code \(exitCode)\n--- stdout ---\n\(stdout)--- stderr ---\n\(stderr)--------------"
    }
}

/// Starts the real `baton` executable as a child process.
enum BatonProcess {
    /// How long a child may run before the guard kills it and fails the test. Every script
    /// ends well before this; it only catches hangs.
    static let wallClockLimit: Double = 20

    /// The `baton` executable: `$BATON_BIN`, or the `baton` next to the test bundle.
    static let executable: Result<URL, BinaryNotFound> = locate()

    struct BinaryNotFound: Error, CustomStringConvertible {
        var description: String
    }

    private static func locate() -> Result<URL, BinaryNotFound> {
        let fm = FileManager.default
        if let path = ProcessInfo.processInfo.environment["BATON_BIN"], !path.isEmpty {
            guard fm.isExecutableFile(atPath: path) else {
                return .failure(BinaryNotFound(description: "BATON_BIN is \(path), which is not an executable file"))
            }
            return .success(URL(fileURLWithPath: path))
        }
        let me: String
        if let resolved = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            me = resolved
        } else {
            me = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).standardizedFileURL.path } ?? ""
        }
        var dir = URL(fileURLWithPath: me).deletingLastPathComponent().standardizedFileURL
        var searched: [String] = []
        while true {
            let candidate = dir.appendingPathComponent("baton").path
            searched.append(candidate)
            var isDirectory: ObjCBool = false
            if fm.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
               fm.isExecutableFile(atPath: candidate)
            {
                return .success(URL(fileURLWithPath: candidate))
            }
            let parent = dir.deletingLastPathComponent().standardizedFileURL
            if parent.path == dir.path || searched.count > 8 { break }
            dir = parent
        }
        return .failure(BinaryNotFound(description: """
            cannot find the baton executable: set BATON_BIN, or build it next to the tests \
            (swift build --product baton); looked at \(searched.joined(separator: ", "))
            """))
    }

    /// Keeps a loaded 2-core machine from running dozens of interpreters at once; the guard
    /// starts only once a child has actually been launched.
    private static let slots = AsyncSlots(count: 4)

    /// Runs `baton ARGS...` (or `program ARGS...`) and returns its exit code and output. A
    /// child still running after ``wallClockLimit`` is killed and the test fails.
    static func run(
        _ arguments: [String],
        program: URL? = nil,
        stdin: Data? = nil,
        environment: [String: String]? = nil,
        directory: URL? = nil,
        limit: Double = wallClockLimit,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> BatonResult {
        let url = try program ?? executable.get()
        _ = ignoreSIGPIPE
        await slots.acquire()
        let result: BatonResult
        do {
            result = try await withCheckedThrowingContinuation { continuation in
                let thread = Thread {
                    do {
                        continuation.resume(returning: try runBlocking(
                            url, arguments, stdin: stdin, environment: environment, directory: directory, limit: limit))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                thread.start()
            }
        } catch {
            await slots.release()
            throw error
        }
        await slots.release()
        if result.killedByGuard {
            let what = "\(url.lastPathComponent) \(arguments.joined(separator: " ")) did not finish: still running after "
                + "\(Int(limit)) s (killed), or its output never closed"
            Issue.record("\(what)\n\(result)", sourceLocation: sourceLocation)
        }
        return result
    }

    /// A child that exits without reading its stdin must not kill the test process.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Collects bytes from a reader thread.
    private final class Collector: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
        func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
    }

    private static func runBlocking(
        _ url: URL, _ arguments: [String], stdin: Data?, environment: [String: String]?, directory: URL?,
        limit: Double
    ) throws -> BatonResult {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if let environment {
            var env = ProcessInfo.processInfo.environment
            env.merge(environment) { _, new in new }
            process.environment = env
        }
        if let directory { process.currentDirectoryURL = directory }
        let outPipe = Pipe(), errPipe = Pipe()
        let inPipe: Pipe? = stdin == nil ? nil : Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe ?? FileHandle.nullDevice

        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()

        let readers = DispatchGroup()
        let out = Collector(), err = Collector()
        for (pipe, collector) in [(outPipe, out), (errPipe, err)] {
            readers.enter()
            Thread {
                collector.set(pipe.fileHandleForReading.readDataToEndOfFile())
                readers.leave()
            }.start()
        }
        if let inPipe, let stdin {
            Thread {
                try? inPipe.fileHandleForWriting.write(contentsOf: stdin)
                try? inPipe.fileHandleForWriting.close()
            }.start()
        }

        var killed = false
        if exited.wait(timeout: .now() + limit) == .timedOut {
            killed = true
            let pid = process.processIdentifier
            if pid > 0 { kill(pid, SIGKILL) }
            exited.wait()
        }
        // The pipes reach end of file once the child is gone.
        if readers.wait(timeout: .now() + 5) == .timedOut { killed = true }
        let code: Int32 = process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
        return BatonResult(
            exitCode: code,
            stdout: String(decoding: out.get(), as: UTF8.self),
            stderr: String(decoding: err.get(), as: UTF8.self),
            killedByGuard: killed)
    }
}

/// A counting semaphore for async code.
actor AsyncSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// A per-test temporary directory holding the scripts; `baton` runs with it as its working
/// directory, so messages name scripts as `x.lua`, exactly as given.
final class ScriptDirectory: @unchecked Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("baton-cli-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// Writes `text` to `name` in the directory.
    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }

    /// Runs `baton ARGS...` in this directory.
    func baton(
        _ arguments: String...,
        stdin: String? = nil,
        environment: [String: String]? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> BatonResult {
        try await BatonProcess.run(
            arguments, stdin: stdin.map { Data($0.utf8) }, environment: environment, directory: url,
            sourceLocation: sourceLocation)
    }
}

/// Writes `script` to `name` in a fresh temporary directory and runs
/// `baton run FLAGS... name ARGS...` there.
func runScript(
    _ script: String,
    name: String = "x.lua",
    flags: [String] = [],
    args: [String] = [],
    stdin: String? = nil,
    limit: Double = BatonProcess.wallClockLimit,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> BatonResult {
    let dir = try ScriptDirectory()
    try dir.write(name, script)
    return try await BatonProcess.run(
        ["run"] + flags + [name] + args, stdin: stdin.map { Data($0.utf8) }, directory: dir.url,
        limit: limit, sourceLocation: sourceLocation)
}

/// Runs `baton ARGS...` with no script file, in a fresh temporary directory.
func baton(
    _ arguments: String...,
    stdin: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> BatonResult {
    let dir = try ScriptDirectory()
    return try await BatonProcess.run(
        arguments, stdin: stdin.map { Data($0.utf8) }, directory: dir.url, sourceLocation: sourceLocation)
}

/// The `YYYY-MM-DDTHH:MM:SS.sssZ LEVEL ` prefix of a text log line, split off.
struct TextLogLine: Equatable {
    var time: String
    var level: String
    var message: String

    /// Parses `2026-11-21T10:00:00.123Z INFO  message`; nil when the line is not one.
    init?(_ line: String) {
        let pattern = #/^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z) (DEBUG|INFO |WARN |ERROR) (.*)$/#
        guard let m = line.wholeMatch(of: pattern) else { return nil }
        time = String(m.1)
        level = String(m.2)
        message = String(m.3)
    }
}

/// Parses every line of `text` as one JSON object, recording an issue for any that is not.
func jsonLines(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
    BatonResult.lines(text).compactMap { line in
        guard let data = line.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            Issue.record("stderr line is not a JSON object: \(line)", sourceLocation: sourceLocation)
            return nil
        }
        return object
    }
}
