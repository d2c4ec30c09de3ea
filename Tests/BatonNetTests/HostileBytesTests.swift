import BatonClient
import BatonCore
import BatonWire
import Foundation
import Testing

/// Bytes no client should send, written by hand inside a same-account TLS connection so they
/// reach the frame decoder: each closes only its own connection (with a Goodbye saying why,
/// when the agent can still send one) while a well-behaved client on another connection keeps
/// working. (Bytes that are not TLS at all: TLSHostileTests.)
///
/// Not covered: a client that stays silent until the 10 s hello timeout. `baton agent` has no
/// flag to shorten it, and the suite does not wait that long.
@Suite("Hostile bytes on raw connections", .timeLimit(.minutes(1)))
struct HostileBytesTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Whether a proper Hello/HelloAck goes first.
        var handshake = false
        var bytes: [UInt8]
        /// The Goodbye reason expected before the agent closes; nil when it cannot send one.
        var reason: Baton_V1_Goodbye.Reason?
        /// Close our sending side after the bytes (the agent reads end of file). Over TLS that
        /// is a close_notify, which the agent's TLS layer answers by closing the whole
        /// connection (it allows no half-closed ones): no Goodbye can follow, as with plaintext
        /// end of file, so the agent's log line is what shows the partial frame was noticed.
        var closeAfter = false
        /// What the agent's log says about the connection, when that is all there is to see.
        var logged: String?

        var testDescription: String { name }
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7f)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            out.append(byte)
        } while value != 0
        return out
    }

    static let describeRequest = RawConnection.encode(.with { $0.describeRequest = .with { $0.requestID = 1 } })

    static let cases: [Case] = [
        Case(name: "no Hello: a DescribeRequest first", bytes: describeRequest, reason: .protocolError),
        Case(name: "garbage: a payload that is not a Frame", bytes: [0x03, 0x61, 0x62, 0x63], reason: .protocolError),
        Case(
            name: "garbage: an HTTP request",
            bytes: Array("GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: hostile-bytes-test/1.0 (a header long enough)\r\n\r\n".utf8),
            reason: .protocolError),
        Case(name: "an 11-byte length varint", bytes: Array(repeating: 0x80, count: 10) + [0x01], reason: .protocolError),
        Case(name: "an 11-byte length varint after the handshake", handshake: true, bytes: Array(repeating: 0xff, count: 10) + [0x01], reason: .protocolError),
        Case(name: "a length of 0", bytes: [0x00], reason: .protocolError),
        Case(name: "a length of 0 after the handshake", handshake: true, bytes: [0x00], reason: .protocolError),
        Case(name: "a length over 1 GiB", handshake: true, bytes: varint((1 << 30) + 1) + [0x08], reason: .protocolError),
        Case(name: "a Frame with unknown field 99", handshake: true, bytes: [0x03, 0x98, 0x06, 0x01], reason: .protocolError),
        Case(name: "a Frame with field number 0", handshake: true, bytes: [0x02, 0x00, 0x00], reason: .protocolError),
        Case(name: "a Hello with protocol_version 2", bytes: RawConnection.encode(.with { $0.hello = .with { $0.protocolVersion = 2 } }), reason: .unsupportedVersion),
        Case(name: "a second Hello", handshake: true, bytes: RawConnection.encode(.with { $0.hello = .with { $0.protocolVersion = 1 } }), reason: .protocolError),
        Case(
            name: "a truncated frame, then end of file", handshake: true, bytes: Array(describeRequest.dropLast(2)), reason: nil,
            closeAfter: true, logged: "connection closed in the middle of a frame"),
        Case(
            name: "a truncated length, then end of file", bytes: [0x80, 0x80], reason: nil, closeAfter: true,
            logged: "connection closed in the middle of a frame"),
        Case(
            name: "an oversized frame that is not a request",
            handshake: true,
            // A Ping of 100,000 bytes, over the agent's 64K.
            bytes: varint(100_000) + [0x62] + varint(99_996) + [0x08, 0x01] + [UInt8](repeating: 0, count: 99_994),
            reason: .frameTooLarge),
    ]

    @Test("closes only that connection", arguments: cases)
    func hostile(_ c: Case) async throws {
        // A hello timeout past anything a loaded runner takes between the two halves: the
        // answer to the bytes themselves is what this checks (seen: the 10 s default firing
        // first in a full parallel run).
        try await withAgent(arguments: ["--max-message", "64K", "--hello-timeout", "60s"]) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let (channel, status, detail) = await client.openService("echo", app: Fixtures.services, on: agent.address)
            let conn = try #require(channel, "open: \(status) \(detail)")

            let raw = try RawConnection(port: agent.address.port)
            if c.handshake {
                let ack = try await onThread { raw.handshake() }
                guard case .frame(let frame) = ack, case .helloAck = frame.body else {
                    Issue.record("no HelloAck: \(ack)")
                    return
                }
            }
            // Half the bytes, then the well-behaved client, then the rest.
            let half = c.bytes.count / 2
            if half > 0 {
                let first = Array(c.bytes[..<half])
                try await onThread { raw.send(first) }
                #expect(Fixtures.message(await conn.send(["during": .int(1)])) == ["during": .int(1)])
            }
            let rest = Array(c.bytes[half...])
            try await onThread {
                raw.send(rest)
                if c.closeAfter { raw.shutdownWrite() }
            }
            let results = try await onThread { raw.readUntilClosed() }
            #expect(results.last == .closed, "the agent did not close the connection: \(results)")
            let goodbyes = results.compactMap(\.goodbye)
            if let reason = c.reason {
                #expect(goodbyes.map(\.reason) == [reason], "\(results)")
                #expect(goodbyes.first.map { !$0.detail.isEmpty } == true)
            }
            #expect(results.dropLast().allSatisfy { $0.goodbye != nil }, "only a Goodbye may come back: \(results)")
            if let logged = c.logged {
                #expect(await eventually(within: 5) { agent.log.contains(logged) }, "\(agent.log)")
            }

            #expect(Fixtures.message(await conn.send(["after": .int(2)])) == ["after": .int(2)])
            #expect(conn.closedStatus == nil)
            let (launched, _) = await client.launch(LaunchRequest(uri: "media:after"), on: agent.address)
            #expect(launched == .success)
            // And a new connection is served as usual.
            let fresh = try RawConnection(port: agent.address.port)
            let ack = try await onThread { fresh.handshake() }
            if case .frame(let frame) = ack, case .helloAck(let helloAck) = frame.body {
                #expect(helloAck.protocolVersion == 1)
                #expect(helloAck.device.id == agent.id)
            } else {
                Issue.record("no HelloAck on a fresh connection: \(ack)")
            }
        }
    }

    @Test("a client that says nothing is dropped after the hello timeout; others are served")
    func silentClient() async throws {
        // Long enough that the well-behaved client's own Hello is never late on a loaded runner.
        try await withAgent(arguments: ["--hello-timeout", "5s"]) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            // The well-behaved client is connected first, so its own Hello is never late.
            let (first, detail) = await client.launch(LaunchRequest(uri: "media:before-silent"), on: agent.address)
            #expect(first == .success, "\(detail)")
            let silent = try RawConnection(port: agent.address.port)
            let (during, _) = await client.launch(LaunchRequest(uri: "media:while-silent"), on: agent.address)
            #expect(during == .success)
            let results = try await onThread { silent.readUntilClosed() }
            #expect(results.last == .closed, "\(results)")
            #expect(results.compactMap(\.goodbye).map(\.reason) == [.timeout], "\(results)")
            let (after, _) = await client.launch(LaunchRequest(uri: "media:after-silent"), on: agent.address)
            #expect(after == .success)
        }
    }

    @Test("oversized requests get a too-large answer with their ids, and the connection lives on")
    func oversizedRequests() async throws {
        try await withAgent(arguments: ["--max-message", "64K"]) { agent in
            let raw = try RawConnection(port: agent.address.port)
            let ack = try await onThread { raw.handshake() }
            guard case .frame(let ackFrame) = ack, case .helloAck(let helloAck) = ackFrame.body else {
                Issue.record("no HelloAck: \(ack)")
                return
            }
            #expect(helloAck.maxFrameSize == 64 * 1024)
            let blob = Baton_V1_Dictionary(["blob": .string(String(repeating: "z", count: 70_000))])

            raw.send(.with { $0.launchRequest = .with { $0.requestID = 7; $0.uri = "media:x"; $0.data = blob } })
            let launch = try await onThread { raw.read() }
            guard case .frame(let launchFrame) = launch, case .launchResponse(let launchResponse) = launchFrame.body else {
                Issue.record("no LaunchResponse: \(launch)")
                return
            }
            #expect(launchResponse.requestID == 7)
            #expect(launchResponse.status == .valueSetTooLarge)

            raw.send(.with { $0.openServiceRequest = .with { $0.requestID = 8; $0.channelID = 3; $0.serviceName = "echo"; $0.appID = Fixtures.services } })
            let open = try await onThread { raw.read() }
            guard case .frame(let openFrame) = open, case .openServiceResponse(let openResponse) = openFrame.body else {
                Issue.record("no OpenServiceResponse: \(open)")
                return
            }
            #expect(openResponse.requestID == 8)
            #expect(openResponse.status == .success)

            raw.send(.with { $0.serviceRequest = .with { $0.channelID = 3; $0.requestID = 9; $0.message = blob } })
            let service = try await onThread { raw.read() }
            guard case .frame(let serviceFrame) = service, case .serviceResponse(let serviceResponse) = serviceFrame.body else {
                Issue.record("no ServiceResponse: \(service)")
                return
            }
            #expect(serviceResponse.requestID == 9)
            #expect(serviceResponse.channelID == 3)
            #expect(serviceResponse.status == .messageSizeTooLarge)

            // The same connection still answers.
            raw.send(.with { $0.serviceRequest = .with { $0.channelID = 3; $0.requestID = 10; $0.message = Baton_V1_Dictionary(["ok": .bool(true)]) } })
            let echo = try await onThread { raw.read() }
            guard case .frame(let echoFrame) = echo, case .serviceResponse(let echoResponse) = echoFrame.body else {
                Issue.record("no ServiceResponse: \(echo)")
                return
            }
            #expect(echoResponse.requestID == 10)
            #expect(echoResponse.status == .success)
            #expect(try ValueDictionary(wire: echoResponse.message) == ["ok": .bool(true)])

            raw.send(.with { $0.ping = .with { $0.nonce = 99 } })
            let pong = try await onThread { raw.read() }
            guard case .frame(let pongFrame) = pong, case .pong(let p) = pongFrame.body else {
                Issue.record("no Pong: \(pong)")
                return
            }
            #expect(p.nonce == 99)
        }
    }
}
