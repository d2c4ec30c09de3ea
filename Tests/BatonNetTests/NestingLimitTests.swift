import BatonCore
import BatonWire
import Foundation
import SwiftProtobuf
import Testing

/// Nesting every client can read: the deepest message an agent takes and echoes parses with
/// stock SwiftProtobuf (its default limit of 100 messages); one level deeper, or hundreds, is
/// answered resource_limits_exceeded naming the path, and the connection lives on.
@Suite("Nesting that every client can read", .timeLimit(.minutes(1)))
struct NestingLimitTests {
    /// A message `depth` dictionaries deep: {d = {d = ... {leaf = 1}}}.
    static func nested(_ depth: Int) -> Baton_V1_Dictionary {
        var dictionary = Baton_V1_Dictionary.with { $0.entries = [.with { $0.key = "leaf"; $0.value = .with { $0.intValue = 1 } }] }
        for _ in 0..<depth {
            let inner = dictionary
            dictionary = .with { $0.entries = [.with { $0.key = "d"; $0.value = .with { $0.dictionaryValue = inner } }] }
        }
        return dictionary
    }

    @Test("an echo 30 levels deep comes back and stock protobuf reads it; 31 and 401 levels get resource_limits_exceeded; the connection lives on")
    func depth() async throws {
        try await withAgent { agent in
            let raw = try await onThread { try RawConnection(port: agent.address.port) }
            let ack = try await onThread { raw.handshake() }
            guard case .frame(let frame) = ack, case .helloAck = frame.body else {
                Issue.record("no HelloAck: \(ack)")
                return
            }
            raw.send(.with { $0.openServiceRequest = .with { $0.requestID = 1; $0.channelID = 1; $0.serviceName = "echo"; $0.appID = Fixtures.services } })
            guard case .frame(let opened) = try await onThread({ raw.read() }), opened.openServiceResponse.status == .success else {
                Issue.record("the echo channel did not open")
                return
            }
            func echo(_ id: UInt64, _ message: Baton_V1_Dictionary) async throws -> Baton_V1_ServiceResponse? {
                raw.send(.with { $0.serviceRequest = .with { $0.channelID = 1; $0.requestID = id; $0.message = message } })
                guard case .frame(let answer) = try await onThread({ raw.read() }), case .serviceResponse(let response) = answer.body else { return nil }
                return response
            }

            // 30 levels of dictionaries: the top one and 29 inside.
            let deepest = try #require(try await echo(2, Self.nested(29)))
            #expect(deepest.status == .success, "\(deepest.detail)")
            // The whole frame, as a stock parser with its default limit reads it.
            let bytes: [UInt8] = try Baton_V1_Frame.with { $0.serviceResponse = deepest }.serializedBytes()
            #expect(throws: Never.self) { _ = try Baton_V1_Frame(serializedBytes: bytes) }
            #expect(deepest.message == Self.nested(29))

            for depth in [30, 400] {
                let refused = try #require(try await echo(UInt64(depth), Self.nested(depth)))
                #expect(refused.status == .resourceLimitsExceeded, "\(refused)")
                #expect(refused.detail == "bad message: message" + String(repeating: ".d", count: 30) + ": nested deeper than 30 levels", "\(refused.detail)")
            }
            let after = try #require(try await echo(3, Self.nested(1)))
            #expect(after.status == .success && after.message == Self.nested(1))
        }
    }
}
