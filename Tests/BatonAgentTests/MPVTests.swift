@testable import BatonAgent
import BatonCore
import Foundation
import NIOCore
import NIOPosix
import Testing

/// mpv's JSON IPC: lines in and out as plain values, and a real headless mpv (`--ao=null`
/// plays in real time) driven over its socket.
@Suite("mpv's JSON IPC")
struct MPVMessageTests {
    @Test("answers by request id: data, or mpv's error; events with their entry id; anything else is nothing or garbage")
    func lines() throws {
        #expect(try MPVMessage(line: Array(#"{"data":{"playlist_entry_id":1},"request_id":1,"error":"success"}"#.utf8))
            == .reply(id: 1, .success(.object([JSON.Member("playlist_entry_id", .int(1))]))))
        #expect(try MPVMessage(line: Array(#"{"request_id":2,"error":"success"}"#.utf8)) == .reply(id: 2, .success(.null)))
        #expect(try MPVMessage(line: Array(#"{"request_id":3,"error":"property unavailable"}"#.utf8))
            == .reply(id: 3, .failure(.failed("property unavailable"))))
        guard case .event(let event) = try MPVMessage(line: Array(#"{"event":"end-file","reason":"error","playlist_entry_id":4,"file_error":"loading failed"}"#.utf8)) else {
            Issue.record("not an event")
            return
        }
        #expect(event.name == "end-file" && event.playlistEntryID == 4 && event.reason == "error" && event.fileError == "loading failed")
        #expect(try MPVMessage(line: Array(#"{"error":"success"}"#.utf8)) == .other)
        #expect(throws: MPVError.self) { try MPVMessage(line: Array("hello".utf8)) }
        #expect(throws: MPVError.self) { try MPVMessage(line: Array("[1,2]".utf8)) }
    }

    @Test("a command goes as one line: the arguments and the request id")
    func commandLine() {
        #expect(MPVMessage.command(.array([.string("get_property"), .string("time-pos")]), id: 7)
            == #"{"command":["get_property","time-pos"],"request_id":7}"# + "\n")
    }
}

@Suite("A real mpv", .timeLimit(.minutes(1)))
struct MPVPlayerProcessTests {
    @Test("started headless, it loads a file at a position and plays from there in real time; stopped, it is gone")
    func playsFromPosition() async throws {
        try await withMPV { connection, media, _ in
            let events = try await EventLog(connection)
            let loading = Date()
            let answer = try await connection.command(loadfile(media.sweep, start: 7.25)).get()
            let entry = try #require(answer["playlist_entry_id"]?.intValue, "loadfile answered \(answer)")
            #expect(await events.waitFor { $0.name == "playback-restart" }, "no playback-restart: \(events.names)")
            let first = try await position(connection)
            // From 7.25, not from 0: at most as far past it as the time since loadfile.
            expectStarted(from: 7.25, at: first.seconds, after: first.answered.timeIntervalSince(loading))
            try await Task.sleep(for: .milliseconds(400))
            let second = try await position(connection)
            expectRealTime(first, second)
            #expect(try await connection.property("path").get().stringValue == media.sweep)
            #expect(events.events.contains { $0.name == "start-file" && $0.playlistEntryID == entry })
        }
    }

    @Test("its state: nothing loaded while idle; then the file, the position it plays from, not paused, real-time rate, the queue")
    func state() async throws {
        try await withMPV { connection, media, _ in
            let idle = try await connection.state().get()
            #expect(idle.uri == nil && idle.position == nil && idle.queue.isEmpty && idle.index == nil && !idle.isPlaying)
            let events = try await EventLog(connection)
            let loading = Date()
            _ = try await connection.command(loadfile(media.sweep, start: 7.25)).get()
            #expect(await events.waitFor { $0.name == "playback-restart" })
            let playing = try await connection.state().get()
            #expect(playing.uri == media.sweep)
            #expect(playing.queue == [media.sweep] && playing.index == 0)
            #expect(!playing.paused && playing.rate == 1 && playing.isPlaying)
            #expect(playing.volume == 100)
            #expect(playing.duration.map { abs($0 - 60) < 0.1 } == true, "duration \(String(describing: playing.duration))")
            let position = try #require(playing.position)
            expectStarted(from: 7.25, at: position, after: playing.at.timeIntervalSince(loading))
            _ = try await connection.command(.array([.string("set_property"), .string("pause"), .bool(true)])).get()
            #expect(try await connection.state().get().paused)
        }
    }

    @Test("play answers once mpv proves it: loaded, at the position asked, advancing in real time; paused stays paused there")
    func playWithProof() async throws {
        try await withMPV { connection, media, _ in
            let asked = Date()
            let proof = try await connection.play(media.sweep, from: 7.25).get()
            expectStarted(from: 7.25, at: proof.position, after: proof.at.timeIntervalSince(asked))
            // play checked the advance against the bounds of its readings; its rate, from their
            // middles, is only an estimate on a loaded machine, so no timing is asserted here.
            let rate = try #require(proof.rate)
            #expect(rate > 0, "\(proof)")
            // Replacing it: the proof follows the new entry, not the old one's end.
            let paused = try await connection.play(media.sweep, from: 20, paused: true).get()
            #expect(paused.rate == nil)
            #expect(abs(paused.position - 20) < 0.05, "\(paused)")
            let state = try await connection.state().get()
            #expect(state.paused && state.position.map { abs($0 - 20) < 0.05 } == true, "\(state)")
        }
    }

    @Test("play refuses what it cannot prove: a missing file cannot open; a start past the end loaded but did not play")
    func playFailures() async throws {
        try await withMPV { connection, media, _ in
            let missing = await #expect(throws: PlaybackFailure.self) { try await connection.play(media.directory + "/nothing.flac", from: 0).get() }
            if case .cannotOpen? = missing {} else { Issue.record("not cannotOpen: \(String(describing: missing))") }
            let pastEnd = await #expect(throws: PlaybackFailure.self) { try await connection.play(media.sweep, from: 100).get() }
            if case .didNotPlay? = pastEnd {} else { Issue.record("not didNotPlay: \(String(describing: pastEnd))") }
            // mpv still serves.
            let again = try await connection.play(media.sweep, from: 1).get()
            #expect(again.position >= 0.95)
        }
    }

    @Test("a file that is not there: loadfile answers, then an end-file with reason error for that entry")
    func missingFile() async throws {
        try await withMPV { connection, media, _ in
            let events = try await EventLog(connection)
            let answer = try await connection.command(loadfile(media.directory + "/nothing.flac", start: 0)).get()
            let entry = try #require(answer["playlist_entry_id"]?.intValue)
            #expect(await events.waitFor { $0.name == "end-file" && $0.playlistEntryID == entry })
            let ended = events.events.first { $0.name == "end-file" && $0.playlistEntryID == entry }
            #expect(ended?.reason == "error")
            // Before a file plays, a position is unavailable: mpv's error, not a hang.
            await #expect(throws: MPVError.failed("property unavailable")) { try await connection.property("time-pos").get() }
        }
    }

    @Test("mpv killed: a call waiting fails at once with closed, and so does the next")
    func killed() async throws {
        try await withMPV { connection, _, process in
            kill(process.pid, SIGKILL)
            await #expect(throws: MPVError.self) { try await connection.command(.array([.string("get_property"), .string("volume")]), timeout: .seconds(10)).get() }
            #expect(await eventually { !connection.isOpen })
            let error = await #expect(throws: MPVError.self) { try await connection.property("volume").get() }
            if case .closed? = error {} else { Issue.record("not closed: \(String(describing: error))") }
        }
    }

    @Test("mpv that cannot start, or exits at once: a status saying so, not a hang")
    func cannotStart() async throws {
        try await withLoop { loop in
        let socket = NSTemporaryDirectory() + "baton-mpv-\(UUID().uuidString).sock"
        let missing = await #expect(throws: MPVError.self) {
            try await MPVProcess.start(executable: "/nonexistent/mpv", socket: socket, arguments: [], on: loop).get()
        }
        #expect("\(missing.map { "\($0)" } ?? "")".contains("cannot start /nonexistent/mpv"))
        let exited = await #expect(throws: MPVError.self) {
            try await MPVProcess.start(executable: "false", socket: socket, arguments: [], on: loop).get()
        }
        #expect("\(exited.map { "\($0)" } ?? "")".contains("exited"))
        }
    }
}

@Suite("Something else on mpv's socket", .timeLimit(.minutes(1)))
struct MPVBadPeerTests {
    @Test("garbage instead of mpv's protocol: the call fails with garbage and the connection ends")
    func garbage() async throws {
        try await withFakeMPV(answer: "this is not json\n") { connection in
            let error = await #expect(throws: MPVError.self) { try await connection.property("volume").get() }
            if case .garbage? = error {} else { Issue.record("not garbage: \(String(describing: error))") }
            #expect(!connection.isOpen)
        }
    }

    @Test("a listener that never answers: the call fails at its deadline, in its words")
    func silent() async throws {
        try await withFakeMPV(answer: nil) { connection in
            let started = Date()
            await #expect(throws: MPVError.timedOut("mpv did not answer within 300ms")) {
                try await connection.property("volume", timeout: .milliseconds(300)).get()
            }
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(connection.isOpen, "a late answer is only late: the connection stands")
        }
    }

    @Test("nothing listening: connect fails saying where")
    func nothingThere() async throws {
        try await withLoop { loop in
            let error = await #expect(throws: MPVError.self) {
                try await MPVConnection.connect(path: "/nonexistent/mpv.sock", on: loop).get()
            }
            #expect("\(error.map { "\($0)" } ?? "")".contains("cannot connect to mpv at /nonexistent/mpv.sock"))
        }
    }
}

// MARK: helpers

/// Test media made on the spot with sox: a 60 s sweep from 100 to 4100 Hz, whose pitch tells
/// the position.
struct TestMedia {
    let directory: String
    var sweep: String { directory + "/sweep.flac" }

    static func make() async throws -> TestMedia {
        let directory = NSTemporaryDirectory() + "baton-media-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let media = TestMedia(directory: directory)
        let sox = try Spawned(["sox", "-n", "-r", "44100", "-c", "1", media.sweep, "synth", "60", "sine", "100-4100"])
        let status = await sox.wait()
        guard status == 0 else { throw MPVError.failed("sox exited with \(status): is sox installed?") }
        return media
    }
}

/// A position read from a player, and when it was asked for and answered.
typealias Reading = (seconds: Double, asked: Date, answered: Date)

/// Expects `position`, read `after` seconds after playback from `start` was asked for, to be
/// from `start` (not 0) and no further on than the time since allows.
func expectStarted(from start: Double, at position: Double, after: TimeInterval, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(position >= start - 0.05 && position <= start + 1.1 * after + 0.05,
            "at \(position), \(after) s after asking for \(start)", sourceLocation: sourceLocation)
}

/// Expects the position to have advanced in real time between two readings. The player read
/// each somewhere between its request and its answer: the wall time between them is within
/// these bounds, however loaded the machine.
func expectRealTime(_ first: Reading, _ second: Reading, sourceLocation: SourceLocation = #_sourceLocation) {
    let moved = second.seconds - first.seconds
    let least = second.asked.timeIntervalSince(first.answered), most = second.answered.timeIntervalSince(first.asked)
    #expect(moved >= 0.9 * least - 0.05 && moved <= 1.1 * most + 0.05,
            "moved \(moved) s in \(least)...\(most) s of wall time", sourceLocation: sourceLocation)
}

/// mpv's `time-pos`, and when it was asked for and answered.
func position(_ connection: MPVConnection) async throws -> Reading {
    let asked = Date()
    let answer = try await connection.property("time-pos").get()
    let answered = Date()
    guard let seconds = answer.doubleValue else { throw MPVError.garbage("time-pos is \(answer)") }
    return (seconds, asked, answered)
}

/// mpv's named loadfile (0.35 and 0.38+ alike): `path` from `start` s, playing.
func loadfile(_ path: String, start: Double) -> JSON {
    .object([
        JSON.Member("name", .string("loadfile")), JSON.Member("url", .string(path)), JSON.Member("flags", .string("replace")),
        JSON.Member("options", .object([JSON.Member("start", .string("\(start)")), JSON.Member("pause", .string("no"))])),
    ])
}

/// A headless mpv on a loop of its own, connected; stopped after `body`.
func withMPV(_ body: (MPVConnection, TestMedia, MPVProcess) async throws -> Void) async throws {
    let media = try await TestMedia.make()
    defer { try? FileManager.default.removeItem(atPath: media.directory) }
    try await withLoop { loop in
    let (process, connection) = try await MPVProcess.start(
        socket: media.directory + "/mpv.sock", arguments: ["--ao=null", "--no-video"], on: loop).get()
    // Generous deadlines: a loaded machine starves mpv.
    try await loop.submit { connection.callTimeout = .seconds(20) }.get()
    do {
        try await body(connection, media, process)
    } catch {
        try? await process.stop().get()
        throw error
    }
    try await process.stop().get()
    #expect(try await process.eventLoop.submit { process.reap() }.get() != nil, "mpv did not stop")
    }
}

/// Something that listens where mpv would and answers every line with `answer` (nil: never).
func withFakeMPV(answer: String?, _ body: (MPVConnection) async throws -> Void) async throws {
    try await withLoop { loop in
    let path = NSTemporaryDirectory() + "baton-fake-mpv-\(UUID().uuidString).sock"
    let server = try await ServerBootstrap(group: loop)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FakeMPV(answer: answer)) }
        }
        .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
    defer { server.close(promise: nil) }
    let connection = try await MPVConnection.connect(path: path, on: loop).get()
    try await body(connection)
    connection.close()
    }
}

/// Runs `body` with an event loop of its own, shut down after.
func withLoop(_ body: (any EventLoop) async throws -> Void) async throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    do {
        try await body(group.next())
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
    try await group.shutdownGracefully()
}

private final class FakeMPV: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let answer: String?
    init(answer: String?) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let answer else { return }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
    }
}

/// The events a connection hears, kept on its loop.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [MPVEvent] = []

    init(_ connection: MPVConnection) async throws {
        try await connection.eventLoop.submit { connection.onEvent = { [self] event in lock.withLock { kept.append(event) } } }.get()
    }

    var events: [MPVEvent] { lock.withLock { kept } }
    var names: [String] { events.map(\.name) }

    /// Whether an event `matching` came within 20 s.
    func waitFor(_ matching: @escaping (MPVEvent) -> Bool) async -> Bool {
        await eventually { self.events.contains(where: matching) }
    }
}

/// Whether `condition` holds within 20 s (players on a loaded machine), asked every 20 ms.
func eventually(_ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A child process of a test's (see ``spawnChild(_:output:environment:group:)``), waited for
/// without blocking a thread: the test runner's threads are few.
final class Spawned: @unchecked Sendable {
    let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    init(_ argv: [String], output: String = "/dev/null") throws {
        pid = try spawnChild(argv, output: output)
    }

    /// Its exit status if it has exited (then it is reaped), else nil.
    var exited: Int32? {
        lock.withLock {
            if status == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid { status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + raw & 0x7f }
            }
            return status
        }
    }

    /// Its exit status, once it exits.
    func wait() async -> Int32 {
        while true {
            if let exited { return exited }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// SIGTERM, then SIGKILL if it is still there after 5 s; reaped.
    func stop() async {
        guard exited == nil else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while exited == nil, Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        if exited == nil {
            kill(pid, SIGKILL)
            _ = await wait()
        }
    }
}
