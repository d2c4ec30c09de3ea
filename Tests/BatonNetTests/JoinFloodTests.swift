@testable import BatonNet
import BatonSecurity
import BatonWire
import Foundation
import Testing

/// A stranger floods the holder's agent with join attempts (wrong codes, pipelined, on more
/// than one connection) from one address: a handful are looked at, the rest refused at once
/// as too many, the agent's log holds a handful of lines and a summary, and a device with a
/// real code, from another address, joins meanwhile.
@Suite("A flood of join attempts", .timeLimit(.minutes(2)))
struct JoinFloodTests {
    typealias Stranger = JoinRequestWireTests.Stranger

    /// Sends `count` join requests with wrong codes on one connection from `source` as
    /// `stranger`, all at once, and reads their answers: how many were refused as too many,
    /// refused otherwise, and anything else.
    static func flood(_ agent: AgentProcess, from source: String, count: Int) throws -> (limited: Int, refused: Int, other: [String]) {
        let stranger = Stranger()
        let context = try TLSHostileTests.strangerContext(chain: [try stranger.certificate], key: stranger.key)
        let raw = try RawConnection(port: agent.address.port, context: context, source: source)
        guard case .frame(let ack) = raw.handshake(), case .helloAck = ack.body else { throw AgentFailure("no HelloAck") }
        var bytes: [UInt8] = []
        for id in 1...count {
            bytes += RawConnection.encode(.with {
                $0.joinRequest = .with {
                    $0.requestID = UInt64(id)
                    $0.inviteSecret = Data((0..<7).map { _ in UInt8.random(in: 0...255) })
                    $0.deviceID = stranger.id
                    $0.deviceName = "flood"
                    $0.publicKey = Data(try! JoinKey.encode(stranger.key.publicKey))
                }
            })
        }
        raw.send(bytes)
        var limited = 0, refused = 0
        var other: [String] = []
        for _ in 0..<count {
            guard case .frame(let frame) = raw.read(), case .joinResponse(let response) = frame.body else {
                other.append("no answer")
                break
            }
            if response.status == .refused, response.detail.hasPrefix("too many join attempts") {
                limited += 1
            } else if response.status == .refused {
                refused += 1
            } else {
                other.append("\(response.status): \(response.detail)")
            }
        }
        return (limited, refused, other)
    }

    @Test("thousands of join attempts from one address: at most 5 looked at, the rest refused as too many; a few log lines and a summary; a real code from another address joins")
    func floodFromOneAddress() async throws {
        let holder = try TestAccount()
        let agent = try await AgentProcess.start(config: Fixtures.config, home: holder.home.path)
        let code = try holder.credentials.invite(in: holder.folder, expiresIn: 600).code

        async let first = onThread { try Self.flood(agent, from: "127.0.0.2", count: 3000) }
        async let second = onThread { try Self.flood(agent, from: "127.0.0.2", count: 3000) }
        let (a, b) = try await (first, second)
        #expect(a.other.isEmpty && b.other.isEmpty, "\(a.other.prefix(3)) \(b.other.prefix(3))")
        #expect(a.refused + b.refused <= 5, "\(a.refused + b.refused) attempts were looked at")
        #expect(a.limited + b.limited >= 6000 - 5, "\(a.limited + b.limited) refused as too many")

        // A device with a real code, from another address, joins meanwhile.
        let newcomer = Stranger()
        try JoinRequestWireTests.expectEnrolled(
            try await JoinRequestWireTests.join(agent, as: newcomer, secret: code.secret, publicKey: try JoinKey.encode(newcomer.key.publicKey)),
            newcomer, in: holder)

        // The log: a few lines in full, then summary lines counting the rest.
        func counted() -> Int {
            agent.log.split(separator: "\n").compactMap { $0.firstMatch(of: /(\d+) join attempts refused/).flatMap { Int($0.1) } }.reduce(0, +)
        }
        let summarised = await eventually(within: 30) { counted() >= 6000 - 5 }
        #expect(summarised, "\(counted()) counted in summary lines; the agent's log:\n\(agent.log.suffix(2000))")
        let lines = agent.log.split(separator: "\n")
        let full = lines.filter { $0.contains("refused a device joining the account") }
        #expect(full.count <= 10, "\(full.count) lines in full")
        #expect(lines.count < 40, "\(lines.count) lines of log:\n\(agent.log.suffix(4000))")
        #expect(agent.log.contains("enrolled a device"), "\(agent.log.suffix(2000))")
        #expect(await agent.stop() == 0, "\(agent.log.suffix(2000))")
    }
}
