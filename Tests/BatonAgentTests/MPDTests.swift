@testable import BatonAgent
import Foundation
import NIOCore
import NIOPosix
import Testing

/// MPD's TCP protocol, against a real `mpd` with a null output (it plays in real time) and
/// against listeners that are not MPD.
@Suite("A real MPD", .timeLimit(.minutes(1)))
struct MPDTests {
    @Test("greets, adds a file of its music directory, seeks into it and plays from there in real time")
    func playsFromPosition() async throws {
        try await withMPD { mpd in
            let connection = mpd.connection
            #expect(connection.version.hasPrefix("0."))
            #expect(try await connection.command("status").get()["state"] == "stop")
            _ = try await connection.command("add " + MPDConnection.quoted("sweep.flac")).get()
            let seeking = Date()
            _ = try await connection.command("seek 0 7.25").get()
            let first = try await elapsed(connection)
            #expect(first.status["state"] == "play")
            expectStarted(from: 7.25, at: first.seconds, after: first.answered.timeIntervalSince(seeking))
            try await Task.sleep(for: .milliseconds(400))
            let second = try await elapsed(connection)
            expectRealTime((first.seconds, first.asked, first.answered), (second.seconds, second.asked, second.answered))
            let queue = try await connection.command("playlistinfo").get()
            #expect(queue["file"] == "sweep.flac")
        }
    }

    @Test("its state: nothing loaded while stopped; then the file under the music directory, the position it plays from, the queue, paused after pause 1")
    func state() async throws {
        try await withMPD { mpd in
            let connection = mpd.connection
            let idle = try await connection.state(musicDirectory: mpd.music).get()
            #expect(idle.uri == nil && idle.position == nil && idle.queue.isEmpty && !idle.isPlaying)
            _ = try await connection.command("add " + MPDConnection.quoted("sweep.flac")).get()
            let seeking = Date()
            _ = try await connection.command("seek 0 7.25").get()
            let playing = try await connection.state(musicDirectory: mpd.music).get()
            #expect(playing.uri == mpd.music + "/sweep.flac")
            #expect(playing.queue == [mpd.music + "/sweep.flac"] && playing.index == 0)
            #expect(!playing.paused && playing.isPlaying && playing.rate == 1)
            #expect(playing.duration.map { abs($0 - 60) < 0.1 } == true)
            let position = try #require(playing.position)
            expectStarted(from: 7.25, at: position, after: playing.at.timeIntervalSince(seeking))
            _ = try await connection.command("pause 1").get()
            #expect(try await connection.state().get().paused)
            // Without the music directory, MPD's own relative names.
            #expect(try await connection.state().get().uri == "sweep.flac")
        }
    }

    @Test("an agent that stops leaves the MPD it attached to playing, unless its on_stop says pause or stop", arguments: [
        ("", "play"), ("on_stop = \"leave\",", "play"), ("on_stop = \"pause\",", "pause"), ("on_stop = \"stop\",", "stop"),
    ])
    func stopAction(field: String, expected: String) async throws {
        try await withMPD { mpd in
            let agent = try await startAgent("""
                app{ id = "music", player = { backend = "mpd", address = "127.0.0.1:\(mpd.port)", \(field)
                                               music_directory = "\(mpd.music)", timeout = 20 } }
                """)
            _ = try await mpd.connection.command("add " + MPDConnection.quoted("sweep.flac")).get()
            _ = try await mpd.connection.command("play").get()
            #expect(try await mpd.connection.command("status").get()["state"] == "play")
            try await agent.stop().get()
            // Read on MPD's own connection, not the agent's.
            #expect(try await mpd.connection.command("status").get()["state"] == expected)
        }
    }

    @Test("MPD's refusals are its ACKs, with code, command and words: an absolute path over TCP, seekcur while stopped")
    func refusals() async throws {
        try await withMPD { mpd in
            let connection = mpd.connection
            await #expect(throws: MPDError.failed(code: 4, command: "add", message: "Access denied")) {
                try await connection.command("add " + MPDConnection.quoted(mpd.music + "/sweep.flac")).get()
            }
            await #expect(throws: MPDError.failed(code: 55, command: "seekcur", message: "Not playing")) {
                try await connection.command("seekcur 5").get()
            }
            // A refusal leaves the connection in step.
            let status = try await connection.command("status").get()
            #expect(status["state"] == "stop")
        }
    }

    @Test("arguments are quoted as MPD reads them")
    func quoting() {
        #expect(MPDConnection.quoted(#"a "b" \c"#) == #""a \"b\" \\c""#)
        #expect(MPDConnection.quoted("") == #""""#)
    }
}

@Suite("Something else where MPD should be", .timeLimit(.minutes(1)))
struct MPDBadPeerTests {
    @Test("a greeting that is not MPD's: connect fails with garbage")
    func wrongGreeting() async throws {
        try await withListener(greeting: "SSH-2.0-OpenSSH\n", answer: nil) { loop, port in
            let error = await #expect(throws: MPDError.self) { try await MPDConnection.connect(host: "127.0.0.1", port: port, on: loop).get() }
            if case .garbage? = error {} else { Issue.record("not garbage: \(String(describing: error))") }
        }
    }

    @Test("garbage in answer to a command: the call fails with garbage and the connection ends")
    func garbageAnswer() async throws {
        try await withListener(greeting: "OK MPD 0.23.5\n", answer: "this is not mpd\n") { loop, port in
            let connection = try await MPDConnection.connect(host: "127.0.0.1", port: port, on: loop).get()
            let error = await #expect(throws: MPDError.self) { try await connection.command("status").get() }
            if case .garbage? = error {} else { Issue.record("not garbage: \(String(describing: error))") }
            #expect(!connection.isOpen)
        }
    }

    @Test("a listener that greets and then says nothing: the call fails at its deadline, and the connection ends (MPD's answers are in order)")
    func silent() async throws {
        try await withListener(greeting: "OK MPD 0.23.5\n", answer: nil) { loop, port in
            let connection = try await MPDConnection.connect(host: "127.0.0.1", port: port, on: loop).get()
            await #expect(throws: MPDError.timedOut("MPD did not answer status within 300ms")) {
                try await connection.command("status", timeout: .milliseconds(300)).get()
            }
            #expect(!connection.isOpen)
            await #expect(throws: MPDError.timedOut("MPD did not answer status within 300ms")) { try await connection.command("status").get() }
        }
    }

    @Test("one that never greets: connect fails at its deadline; nothing listening: connect fails saying where")
    func noGreeting() async throws {
        try await withListener(greeting: nil, answer: nil) { loop, port in
            await #expect(throws: MPDError.timedOut("MPD at 127.0.0.1:\(port) did not greet within 300ms")) {
                try await MPDConnection.connect(host: "127.0.0.1", port: port, on: loop, timeout: .milliseconds(300)).get()
            }
        }
        try await withLoop { loop in
            let error = await #expect(throws: MPDError.self) { try await MPDConnection.connect(host: "127.0.0.1", port: 1, on: loop).get() }
            #expect("\(error.map { "\($0)" } ?? "")".contains("cannot connect to MPD at 127.0.0.1:1"))
        }
    }
}

// MARK: helpers

/// `elapsed` from MPD's status, with the status, and when it was asked for and answered.
func elapsed(_ connection: MPDConnection) async throws -> (seconds: Double, status: [MPDPair], asked: Date, answered: Date) {
    let asked = Date()
    let status = try await connection.command("status").get()
    let answered = Date()
    guard let seconds = status["elapsed"].flatMap(Double.init) else { throw MPDError.garbage("no elapsed in \(status)") }
    return (seconds, status, asked, answered)
}

/// A real `mpd` of its own (null output, its own port and folders) whose music directory holds
/// the sweep, its database updated, and a connection to it.
struct RunningMPD {
    let connection: MPDConnection
    let music: String
    let port: Int
}

func withMPD(_ body: (RunningMPD) async throws -> Void) async throws {
    let media = try await TestMedia.make()
    defer { try? FileManager.default.removeItem(atPath: media.directory) }
    try await withLoop { loop in
        // A port free a moment ago can be taken before mpd binds it: mpd exits then, and another
        // port is tried.
        for attempt in 1...3 {
            let port = try freePort()
            let mpd = try Spawned(["mpd", "--no-daemon", try mpdConfig(media, port: port)], output: media.directory + "/stderr")
            guard let connection = await connect(to: port, while: mpd, on: loop) else {
                await mpd.stop()
                guard attempt < 3 else {
                    let said = (try? String(contentsOfFile: media.directory + "/stderr", encoding: .utf8)) ?? ""
                    let log = (try? String(contentsOfFile: media.directory + "/log", encoding: .utf8)) ?? ""
                    throw MPDError.closed("mpd did not listen on \(port) (exit status: \(String(describing: mpd.exited))): \(said)\n\(log)")
                }
                continue
            }
            do {
                // Generous deadlines: a loaded machine starves MPD, and a missed deadline ends the
                // connection.
                try await loop.submit { connection.callTimeout = .seconds(20) }.get()
                // A first start scans in the background: wait until the sweep is in the database.
                _ = try await connection.command("update").get()
                #expect(await eventually { (try? await connection.command("status").get()["updating_db"]) == .some(nil) })
                try await body(RunningMPD(connection: connection, music: media.directory, port: port))
                connection.close()
            } catch {
                await mpd.stop()
                throw error
            }
            await mpd.stop()
            return
        }
    }
}

/// mpd's configuration for `media`'s folder and `port`: a null output, no scanning by itself.
private func mpdConfig(_ media: TestMedia, port: Int) throws -> String {
    let config = media.directory + "/mpd.conf"
    try MPDConnection.headlessConfiguration(musicDirectory: media.directory, stateDirectory: media.directory, port: port)
        .write(toFile: config, atomically: true, encoding: .utf8)
    return config
}

/// A connection to the mpd on `port` once it listens; nil when it exits first or takes 10 s.
private func connect(to port: Int, while mpd: Spawned, on loop: any EventLoop) async -> MPDConnection? {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline, mpd.exited == nil {
        if let connection = try? await MPDConnection.connect(host: "127.0.0.1", port: port, on: loop).get() { return connection }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return nil
}

/// A port nothing listens on now.
func freePort() throws -> Int {
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

/// A TCP listener on loopback that sends `greeting` on accepting (nil: nothing) and answers
/// every read with `answer` (nil: never).
func withListener(greeting: String?, answer: String?, _ body: (any EventLoop, Int) async throws -> Void) async throws {
    try await withLoop { loop in
        let server = try await ServerBootstrap(group: loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(FakeMPD(greeting: greeting, answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        try await body(loop, server.localAddress?.port ?? 0)
    }
}

private final class FakeMPD: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let greeting: String?
    let answer: String?
    init(greeting: String?, answer: String?) {
        self.greeting = greeting
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        if let greeting { context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: greeting)), promise: nil) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let answer else { return }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
    }
}
