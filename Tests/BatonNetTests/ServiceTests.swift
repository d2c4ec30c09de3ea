import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// App-service channels over real connections to a real agent process.
@Suite("App services on an agent", .timeLimit(.minutes(1)))
struct ServiceTests {
    @Test("describe: the device and its apps as configured")
    func describe() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (device, apps) = try await client.describe(agent.address).get()
            #expect(device.id == agent.id)
            #expect(device.name == "Net Test")
            #expect(device.kind == .tv)
            #expect(device.platform == Platform.current)
            #expect(device.model == "Model T")
            #expect(device.manufacturer == "ACME")
            #expect(apps.map(\.id) == [Fixtures.player, Fixtures.alt, Fixtures.status, Fixtures.argv, Fixtures.unstartable, Fixtures.services])
            let services = try #require(apps.last)
            #expect(services.name == "Services")
            #expect(services.anonymous)
            #expect(services.schemes.isEmpty)
            #expect(services.services == ["ask", "broken", "busy", "closed", "echo", "forever", "hangup", "launches", "sleep", "watch"])
            #expect(services.attributes == ["tier": .string("test"), "level": .int(3)])
            #expect(apps[1].schemes == ["media", "alt", "shared"])
            #expect(!apps[1].anonymous)
        }
    }

    @Test("opening: success, app_not_installed, app_service_unavailable")
    func openStatuses() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let cases: [(String, String, OpenStatus)] = [
                ("echo", Fixtures.services, .success),
                ("echo", "org.test.nope", .appNotInstalled),
                ("nope", Fixtures.services, .appServiceUnavailable),
                ("echo", Fixtures.player, .appServiceUnavailable),
            ]
            for (service, app, expected) in cases {
                let (channel, status, detail) = await client.openService(service, app: app, on: agent.address)
                #expect(status == expected, "\(app)/\(service): \(detail)")
                #expect((channel != nil) == (expected == .success))
                if expected != .success { #expect(!detail.isEmpty) }
                channel?.close()
            }
        }
    }

    @Test("a closed port: every call answers remote_system_unavailable")
    func unreachablePort() async throws {
        let closed = try ClosedPort()
        defer { closed.close() }
        let device = closed.device
        let client = makeClient(connectTimeout: .seconds(2))
        defer { client.shutdown() }
        let open = try #require(await result(of: client.openService("echo", app: Fixtures.services, on: device)), "open never answered")
        let (channel, status, detail) = try open.get()
        #expect(channel == nil)
        #expect(status == .remoteSystemUnavailable, "\(detail)")
        let launch = try #require(await result(of: client.launch(LaunchRequest(uri: "media:x"), on: device)), "launch never answered")
        #expect(try launch.get().0 == .remoteSystemUnavailable)
        let send = try #require(await result(of: client.send([:], to: "echo", app: Fixtures.services, on: device)), "send never answered")
        #expect(try send.get().status == .remoteSystemUnavailable)
        let describe = try #require(await result(of: client.describe(device)), "describe never answered")
        #expect(throws: BatonClientError.self) { try describe.get() }
    }

    @Test("a listener that never answers Hello: remote_system_unavailable once the connect timeout is over")
    func silentListener() async throws {
        // A socket that listens but never accepts: the kernel completes the TCP handshake and
        // nothing ever answers.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = bind(fd, $0, length) } }
        withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) } }
        #expect(listen(fd, 8) == 0)
        let device = DeviceAddress(host: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port)))
        let client = makeClient(connectTimeout: .milliseconds(300))
        defer { client.shutdown() }
        let launch = try #require(await result(of: client.launch(LaunchRequest(uri: "media:x"), on: device)), "launch never answered")
        let (status, detail) = try launch.get()
        #expect(status == .remoteSystemUnavailable, "\(detail)")
    }

    /// One message holding every kind of value, with bounds and edge cases.
    static let everyKind: ValueDictionary = {
        let uuid = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
        // Whole microseconds, as the wire carries dates.
        let date = Date(timeIntervalSinceReferenceDate: Double(785_000_000_123_456) / 1_000_000)
        let epoch = Date(timeIntervalSince1970: 0)
        return [
            "string": .string("héllo, wörld ✓ 🎬"),
            "empty string": .string(""),
            "string with NUL": .string("a\u{0}b"),
            "int max": .int(.max),
            "int min": .int(.min),
            "zero": .int(0),
            "negative": .int(-42),
            "double": .double(0.1),
            "integral double": .double(3.0),
            "tiny double": .double(-2.5e-300),
            "huge double": .double(.greatestFiniteMagnitude),
            "infinity": .double(.infinity),
            "true": .bool(true),
            "false": .bool(false),
            "date": .date(date),
            "epoch": .date(epoch),
            "uuid": .uuid(uuid),
            "bytes": .bytes([0, 1, 0x7f, 0x80, 0xff, 0]),
            "empty bytes": .bytes([]),
            "ints": .array([.int(1), .int(.max), .int(.min)]),
            "doubles": .array([.double(1.5), .double(2.0)]),
            "strings": .array([.string("a"), .string(""), .string("c")]),
            "bools": .array([.bool(false), .bool(true)]),
            "dates": .array([.date(date), .date(epoch)]),
            "uuids": .array([.uuid(uuid), .uuid(uuid)]),
            "bytes list": .array([.bytes([1]), .bytes([])]),
            "arrays": .array([.array([.int(1)]), .array([]), .array([.int(2), .int(3)])]),
            "dictionaries": .array([.dictionary(["a": .int(1)]), .dictionary([:]), .dictionary(["b": .string("x")])]),
            "empty array": .array([]),
            "empty dictionary": .dictionary([:]),
            "nested": .dictionary(["level1": .dictionary(["level2": .dictionary(["level3": .array([.bool(true)]), "empty": .array([])])])]),
            "": .string("the empty key"),
            "unicode key ✓": .int(1),
        ]
    }()

    @Test("every value kind makes the round trip through a Lua echo provider unchanged")
    func roundTrip() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("echo", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let reply = Fixtures.message(await conn.send(Self.everyKind))
            for (key, value) in Self.everyKind {
                #expect(reply[key] == value, "\(key): sent \(value), got \(reply[key].map { "\($0)" } ?? "nothing")")
            }
            #expect(reply.count == Self.everyKind.count)
            #expect(reply == Self.everyKind)
            // NaN is never equal to itself: checked on its own.
            let nan = Fixtures.message(await conn.send(["nan": .double(.nan)]))
            if case .double(let d) = nan["nan"] { #expect(d.isNaN) } else { Issue.record("nan came back as \(String(describing: nan["nan"]))") }
            // Each kind alone, so one failure does not hide another.
            for (key, value) in Self.everyKind {
                let one = await conn.send([key: value])
                #expect(one.status == .success && one.message == [key: value], "\(key): \(one)")
            }
            conn.close()
        }
    }

    @Test("a provider's statuses reach the client")
    func providerStatuses() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let busy = try await client.send([:], to: "busy", app: Fixtures.services, on: agent.address).get()
            #expect(busy.status == .resourceLimitsExceeded)
            let broken = try await client.send([:], to: "broken", app: Fixtures.services, on: agent.address).get()
            #expect(broken.status == .failure)
            #expect(broken.detail.contains("the provider broke"), "\(broken.detail)")
            let missing = try await client.send([:], to: "echo", app: "org.test.nope", on: agent.address).get()
            #expect(missing.status != .success)
            #expect(missing.detail.contains("app_not_installed"), "\(missing.detail)")
        }
    }

    @Test("host-initiated requests: conn:send reaches the client's onRequest, and the provider gets the reply")
    func hostInitiated() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("ask", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let loop = client.eventLoop

            // No handler yet: the provider hears failure.
            let unanswered = Fixtures.message(await conn.send(["question": .dictionary(["q": .string("anyone?")])]))
            #expect(unanswered["status"] == .string("failure"))

            try await loop.submit {
                conn.onRequest = { message in
                    if message["refuse"] == .bool(true) {
                        return loop.makeSucceededFuture(ServiceReply(status: .resourceLimitsExceeded, detail: "no"))
                    }
                    // Answer later, from the loop, to show the reply may take its time.
                    return loop.scheduleTask(in: .milliseconds(10)) {
                        ServiceReply(status: .success, message: ["answer": .string("pong"), "seen": .dictionary(message)])
                    }.futureResult
                }
            }.get()
            let question: ValueDictionary = ["q": .string("ping"), "n": .int(7), "when": .date(Date(timeIntervalSince1970: 1_700_000_000))]
            let answered = Fixtures.message(await conn.send(["question": .dictionary(question)]))
            #expect(answered["status"] == .string("success"))
            #expect(answered["reply"] == .dictionary(["answer": .string("pong"), "seen": .dictionary(question)]))

            let refused = Fixtures.message(await conn.send(["question": .dictionary(["refuse": .bool(true)])]))
            #expect(refused["status"] == .string("resource_limits_exceeded"))
            #expect(refused["reply"] == .dictionary([:]))
            conn.close()
        }
    }

    @Test("the client closes: the agent's conn.on_closed hears completed")
    func clientCloses() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("watch", app: Fixtures.services, on: agent.address)
            let watched = try #require(channel, "open: \(status) \(detail)")
            #expect(Fixtures.message(await watched.send(["tag": .string("client-close")])) == ["watching": .string("client-close")])
            let closedEvent = watched.closedEvents
            watched.close()
            #expect(await first(of: closedEvent) == .completed)
            #expect(watched.closedStatus == .completed)
            let after = await watched.send(["tag": .string("x")])
            #expect(after.status == .appServiceConnectionClosed)

            #expect(await recordedClose("client-close", client, agent) == .string("completed"), "on_closed never ran, or heard another status")
        }
    }

    @Test("the agent closes (conn:close()): the client's onClosed hears completed")
    func agentCloses() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("hangup", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")
            let closedEvent = conn.closedEvents
            // The request that makes the provider hang up gets an answer, whichever it is.
            let reply = try #require(await result(of: conn.send([:])), "the hangup request was never answered")
            _ = try reply.get()
            #expect(await first(of: closedEvent) == .completed)
            let after = await conn.send([:])
            #expect(after.status == .appServiceConnectionClosed)
            // The connection is fine.
            let (again, _) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
            #expect(again == .success)
        }
    }

    @Test("1,000 channels on one connection, every request answered")
    func thousandChannels() async throws {
        try await withAgent { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let loop = client.eventLoop
            let count = 1000
            let opened = try await EventLoopFuture.whenAllSucceed(
                (0..<count).map { _ in client.openService("echo", app: Fixtures.services, on: agent.address) }, on: loop
            ).get()
            let channels = opened.compactMap(\.0)
            #expect(channels.count == count, "\(opened.filter { $0.0 == nil }.prefix(3).map { "\($0.1): \($0.2)" })")
            #expect(Set(channels.map(\.channelID)).count == channels.count)
            let replies = try await EventLoopFuture.whenAllSucceed(
                channels.enumerated().map { i, channel in channel.send(["i": .int(Int64(i)), "pad": .string(String(repeating: "p", count: i % 50))]) },
                on: loop
            ).get()
            var wrong = 0
            for (i, reply) in replies.enumerated() where reply.message?["i"] != .int(Int64(i)) || reply.status != .success {
                wrong += 1
                if wrong < 4 { Issue.record("channel \(i): \(reply)") }
            }
            #expect(wrong == 0)
            // A second round on the same channels, all at once again.
            let second = try await EventLoopFuture.whenAllSucceed(
                channels.enumerated().map { i, channel in channel.send(["j": .int(Int64(i))]) }, on: loop
            ).get()
            #expect(second.enumerated().allSatisfy { i, r in r.status == .success && r.message == ["j": .int(Int64(i))] })
            for channel in channels { channel.close() }
            let (status, _) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
            #expect(status == .success)
        }
    }
}
