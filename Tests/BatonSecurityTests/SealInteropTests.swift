@testable import BatonSecurity
import Foundation
import Testing

/// The protocol as SealHandshake's doc comment writes it down is enough to talk to Baton: a
/// responder written from it in Python (Tests/BatonNetTests/Interop/seal_peer.py, python's
/// cryptography) answers a Swift hello, and each side opens what the other sealed.
@Suite("Sealed sessions with a Python peer")
struct SealInteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("BatonNetTests/Interop/seal_peer.py").path

    @Test func aPythonResponderWrittenFromTheSpecTalksWithSwift() throws {
        try SealDevices.with { d in
            let folder = d.tvFolder.path
            let keyPath = folder + "/seal-key.pem", chainPaths = [folder + "/seal-leaf.der", folder + "/seal-ca.der"]
            try (d.tv.key.serializeAsPEM().pemString + "\n").write(toFile: keyPath, atomically: true, encoding: .utf8)
            for (path, certificate) in zip(chainPaths, try d.tvSeal.chain) { try Data(certificate).write(to: URL(fileURLWithPath: path)) }

            let python = Process()
            python.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            python.arguments = ["30", "python3", Self.script, keyPath, d.tv.deviceID] + chainPaths
            let input = Pipe(), output = Pipe(), errors = Pipe()
            python.standardInput = input
            python.standardOutput = output
            python.standardError = errors
            try python.run()
            defer { if python.isRunning { python.terminate() } }

            let dial = SealInitiator(credentials: try d.laptop, to: d.tv.deviceID)
            input.fileHandleForWriting.write(Data((dial.hello.hexDigits + "\n").utf8))
            let answer = Self.lines(2, from: output.fileHandleForReading)
            try #require(answer.count == 2, "the Python peer said: \(answer)\n\(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
            var (session, agent) = try dial.finish(reply: try #require(Self.bytes(answer[0])), trustStore: try d.laptopStore, expecting: .ownAccount)
            #expect(agent.authorization == .sameAccount && agent.deviceID == d.tv.deviceID)
            #expect(try session.open(try #require(Self.bytes(answer[1]))) == SealedMessage(kind: 5, counter: 0, plaintext: Array("hello from python".utf8)))

            let sealed = session.seal(Array("hello from swift".utf8), kind: 6, expiry: UInt32(Date().timeIntervalSince1970 + 60))
            input.fileHandleForWriting.write(Data((sealed.hexDigits + "\n").utf8))
            #expect(Self.lines(1, from: output.fileHandleForReading) == ["6 0 hello from swift"])
            python.waitUntilExit()
            #expect(python.terminationStatus == 0, "\(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        }
    }

    /// The next `count` lines `handle` gives, fewer if it ends first (the peer runs under
    /// `timeout`, so it does).
    static func lines(_ count: Int, from handle: FileHandle) -> [String] {
        var buffer = Data()
        while buffer.count(where: { $0 == 0x0A }) < count {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer += chunk
        }
        return String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
            .reduce(into: [UInt8]?([])) { out, byte in if let byte { out?.append(byte) } else { out = nil } }
    }
}
