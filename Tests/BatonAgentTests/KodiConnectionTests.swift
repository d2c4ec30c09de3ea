@testable import BatonAgent
import BatonCore
import Foundation
import NIOCore
import NIOPosix
import Testing

/// Kodi's stream framed by braces, with no Kodi: objects back to back, split anywhere.
@Suite("Kodi's JSON-RPC framing")
struct KodiFramerTests {
    static let stream = #"{"id":1,"jsonrpc":"2.0","result":"pong"}{"jsonrpc":"2.0","method":"Player.OnSeek","params":{"data":{"title":"a } { \" ]","x":[1,{"y":2}]},"sender":"xbmc"}}"#
        + "\n " + #"{"id":2,"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params."}}"#

    @Test("objects back to back, braces and escaped quotes inside strings, whitespace between: the same objects however the bytes are split")
    func splits() throws {
        let bytes = Array(Self.stream.utf8)
        for cut in [1, 2, 7, 40, bytes.count] {
            var framer = KodiFramer()
            var objects: [String] = []
            for chunk in stride(from: 0, to: bytes.count, by: cut) {
                var buffer = ByteBuffer(bytes: bytes[chunk..<min(chunk + cut, bytes.count)])
                framer.append(&buffer)
                while let object = try framer.nextObject() { objects.append(String(buffer: object)) }
                framer.compact()
            }
            #expect(objects.count == 3, "split every \(cut) bytes")
            let messages = try objects.map { try KodiMessage(object: Array($0.utf8)) }
            #expect(messages[0] == .reply(id: 1, .success(.string("pong"))))
            guard case .notification(let seek) = messages[1] else { Issue.record("not a notification: \(messages[1])"); continue }
            #expect(seek.method == "Player.OnSeek" && seek.data["title"] == .string(#"a } { " ]"#))
            #expect(messages[2] == .reply(id: 2, .failure(.failed(code: -32602, message: "Invalid params."))))
        }
    }

    @Test("what is not an object between objects, and an object over 1 MiB, are errors")
    func garbage() throws {
        var framer = KodiFramer()
        var buffer = ByteBuffer(string: #"{"id":1,"result":1} hello"#)
        framer.append(&buffer)
        #expect(try framer.nextObject() != nil)
        #expect(throws: KodiFramer.Failure.notAnObject(UInt8(ascii: "h"))) { try framer.nextObject() }

        var long = KodiFramer()
        var open = ByteBuffer(string: #"{"result":""#)
        long.append(&open)
        #expect(try long.nextObject() == nil)
        var filler = ByteBuffer(repeating: UInt8(ascii: "a"), count: KodiFramer.maxObjectBytes)
        long.append(&filler)
        #expect(throws: KodiFramer.Failure.tooLong) { try long.nextObject() }
    }

    @Test("times both ways, to the millisecond")
    func times() {
        #expect(KodiTime.json(3725.25) == .object([
            JSON.Member("hours", .int(1)), JSON.Member("minutes", .int(2)), JSON.Member("seconds", .int(5)), JSON.Member("milliseconds", .int(250)),
        ]))
        #expect(KodiTime.seconds(KodiTime.json(65.432)) == 65.432)
        #expect(KodiTime.seconds(.string("1:05")) == nil)
    }

    @Test("agent.lua's kodi player: address and timeout, checked")
    func backend() throws {
        let backend = try KodiBackend(PlayerFields(["address": "10.0.0.5:9091", "timeout": 5], app: "tv"))
        #expect(backend.address.host == "10.0.0.5" && backend.address.port == 9091 && backend.timeout == 5)
        #expect(try KodiBackend(PlayerFields([:], app: "tv")).address.port == 9090)
        #expect(throws: (any Error).self) { try KodiBackend(PlayerFields(["address": "nowhere"], app: "tv")) }
        #expect(PlayerBackends.named("kodi") == KodiBackend.self)
    }
}

/// Something else where Kodi should be: answers that are not Kodi's, or none.
@Suite("Something else where Kodi should be", .timeLimit(.minutes(1)))
struct KodiBadPeerTests {
    @Test("garbage instead of an answer: connecting fails saying it is not JSON, and the player's call fails as player_failed")
    func garbage() async throws {
        try await withFakeKodi({ _ in "this is not kodi\n" }) { loop, port in
            let error = await #expect(throws: KodiError.self) { try await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop).get() }
            guard case .garbage(let text)? = error else { Issue.record("not garbage: \(String(describing: error))"); return }
            #expect(text.contains("not a JSON object"))
            let player = KodiPlayer(host: "127.0.0.1", port: port, on: loop, logger: .init(label: "kodi-test"))
            let failure = await #expect(throws: PlaybackFailure.self) { try await player.state().get() }
            #expect(failure?.code == "player_failed")
            #expect("\(failure.map { "\($0)" } ?? "")".contains("not a JSON object"))
            try await player.shutdown().get()
        }
    }

    @Test("an object that never ends: the connection ends past 1 MiB, and its calls fail saying so")
    func endless() async throws {
        try await withFakeKodi({ request in
            request["method"] == .string("JSONRPC.Ping") ? pong(request) : #"{"id":2,"result":""# + String(repeating: "a", count: (1 << 20) + 10)
        }) { loop, port in
            let connection = try await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop).get()
            let error = await #expect(throws: KodiError.self) { try await connection.call("Player.GetActivePlayers").get() }
            #expect(error == .garbage("Kodi at 127.0.0.1:\(port) sent an object longer than 1 MiB"))
            #expect(!connection.isOpen)
        }
    }

    @Test("a listener that never answers: connecting fails at its deadline; one that stops answering: the call fails at its deadline, the connection stays")
    func silent() async throws {
        try await withFakeKodi({ _ in nil }) { loop, port in
            await #expect(throws: KodiError.timedOut("what listens at 127.0.0.1:\(port) did not answer Kodi's JSONRPC.Ping within 300ms")) {
                try await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop, timeout: .milliseconds(300)).get()
            }
            let player = KodiPlayer(host: "127.0.0.1", port: port, on: loop, logger: .init(label: "kodi-test"))
            player.callTimeout = .milliseconds(300)
            let failure = await #expect(throws: PlaybackFailure.self) { try await player.play(.init(queue: ["/x.flac"])).get() }
            #expect(failure?.code == "player_failed")
            #expect("\(failure.map { "\($0)" } ?? "")".contains("did not answer"), "\(String(describing: failure))")
            try await player.shutdown().get()
        }
        try await withFakeKodi({ request in request["method"] == .string("JSONRPC.Ping") ? pong(request) : nil }) { loop, port in
            let connection = try await KodiConnection.connect(host: "127.0.0.1", port: port, on: loop).get()
            await #expect(throws: KodiError.timedOut("Kodi at 127.0.0.1:\(port) did not answer Player.GetActivePlayers within 300ms")) {
                try await connection.call("Player.GetActivePlayers", timeout: .milliseconds(300)).get()
            }
            #expect(connection.isOpen)
            connection.close()
        }
    }

    @Test("nothing listening: the player fails as player_failed, saying where")
    func nothing() async throws {
        try await withLoop { loop in
            let player = KodiPlayer(host: "127.0.0.1", port: 1, on: loop, logger: .init(label: "kodi-test"))
            let failure = await #expect(throws: PlaybackFailure.self) { try await player.state().get() }
            #expect(failure?.code == "player_failed")
            #expect("\(failure.map { "\($0)" } ?? "")".contains("cannot connect to Kodi at 127.0.0.1:1"), "\(String(describing: failure))")
            try await player.shutdown().get()
        }
    }
}

/// Kodi's answer `pong` to `request`.
private func pong(_ request: JSON) -> String {
    #"{"id":\#(request["id"]?.intValue ?? 0),"jsonrpc":"2.0","result":"pong"}"#
}

/// A TCP listener on loopback that reads Kodi's calls and answers each with what `answer`
/// says (nil: nothing).
func withFakeKodi(_ answer: @escaping @Sendable (JSON) -> String?, _ body: (any EventLoop, Int) async throws -> Void) async throws {
    try await withLoop { loop in
        let server = try await ServerBootstrap(group: loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FakeKodi(answer: answer)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        try await body(loop, server.localAddress?.port ?? 0)
    }
}

private final class FakeKodi: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let answer: @Sendable (JSON) -> String?
    private var framer = KodiFramer()

    init(answer: @escaping @Sendable (JSON) -> String?) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        framer.append(&bytes)
        while let object = try? framer.nextObject() {
            guard let request = try? JSON.parse(object.readableBytesView), let text = answer(request) else { continue }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
        }
        framer.compact()
    }
}
