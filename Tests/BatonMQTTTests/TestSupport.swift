import BatonMQTT
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The loop every test client runs on; never shut down (the test process ends).
let testGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)

/// Log lines of the loggers it makes, kept for assertions (and echoed at debug to nothing).
final class LogCapture: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])

    var all: [String] { lines.withLockedValue { $0 } }

    func logger(_ label: String = "mqtt-test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self) }
        logger.logLevel = .debug
        return logger
    }

    func append(_ line: String) { lines.withLockedValue { $0.append(line) } }

    func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.append("\(event.level) \(event.message)")
        }
    }
}

/// Records what the client tells its delegate.
final class RecordingDelegate: MQTTClientDelegate, Sendable {
    private let state = NIOLockedValueBox<(messages: [MQTTMessage], connects: [Bool], disconnects: [String])>(([], [], []))

    var messages: [MQTTMessage] { state.withLockedValue { $0.messages } }
    var connects: [Bool] { state.withLockedValue { $0.connects } }
    var disconnects: [String] { state.withLockedValue { $0.disconnects } }

    func mqttClient(_ client: MQTTClient, connectedWithSessionPresent sessionPresent: Bool) {
        state.withLockedValue { $0.connects.append(sessionPresent) }
    }

    func mqttClient(_ client: MQTTClient, received message: MQTTMessage) {
        state.withLockedValue { $0.messages.append(message) }
    }

    func mqttClient(_ client: MQTTClient, disconnected reason: String) {
        state.withLockedValue { $0.disconnects.append(reason) }
    }

    func messages(on topic: String) -> [MQTTMessage] { messages.filter { $0.topic == topic } }
}

/// Polls `condition` every 20 ms; throws `what` when `seconds` pass first.
func waitUntil(_ what: String, within seconds: Double = 10, _ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { throw TestFailure("waited \(seconds) s for \(what)") }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
}

/// A client of `broker` on the test group, started, with `delegate`, once connected.
func connectedClient(
    _ clientID: String, port: Int, delegate: RecordingDelegate, logs: LogCapture = LogCapture(),
    configure: (inout MQTTClient.Configuration) -> Void = { _ in }
) async throws -> MQTTClient {
    var configuration = MQTTClient.Configuration(host: "127.0.0.1", port: port, clientID: clientID)
    configuration.reconnectBackoffBase = .milliseconds(50)
    configuration.reconnectBackoffCap = .seconds(1)
    configure(&configuration)
    let client = MQTTClient(configuration: configuration, eventLoop: testGroup.next(), logger: logs.logger())
    client.delegate = delegate
    client.start()
    try await waitUntil("\(clientID) to connect") { !delegate.connects.isEmpty }
    return client
}

/// Runs a command to its end (with a deadline), returning its standard output.
func run(_ executable: String, _ arguments: [String], within seconds: Double = 15) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning, Date() < deadline { usleep(20_000) }
    if process.isRunning {
        process.terminate()
        throw TestFailure("\(executable) \(arguments.joined(separator: " ")) ran over \(seconds) s")
    }
    return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
}

extension ByteBuffer {
    var text: String { String(buffer: self) }
}
