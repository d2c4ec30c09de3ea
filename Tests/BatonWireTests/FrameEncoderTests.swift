import BatonCore
import BatonWire
import NIOCore
import NIOEmbedded
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Frame encoder")
struct FrameEncoderTests {
    @Test func writesVarintLengthThenPayload() throws {
        var out = ByteBuffer()
        try FrameEncoder().encode(data: pingFrame(1), out: &out)
        // Ping (field 12, length-delimited) holding nonce (field 1) = 1.
        #expect(Array(out.readableBytesView) == [0x04, 0x62, 0x02, 0x08, 0x01])
    }

    @Test func longPayloadGetsMultiByteLength() throws {
        var frame = Baton_V1_Frame()
        frame.launchRequest.uri = String(repeating: "u", count: 300)
        var out = ByteBuffer()
        try FrameEncoder().encode(data: frame, out: &out)
        var copy = out
        let length = try #require(try Varint.read(from: &copy))
        #expect(Int(length) == copy.readableBytes)
        #expect(length > 300)
        #expect(Varint.encodedLength(length) == 2)
    }

    @Test func frameOverThePeersLimitIsRefusedAndNothingWritten() throws {
        var frame = Baton_V1_Frame()
        frame.serviceRequest.message = Baton_V1_Dictionary(["blob": .bytes(Array(repeating: 1, count: 2000))])
        let encoder = FrameEncoder(limits: FrameLimits(maxFrameSize: 1024))
        var out = ByteBuffer()
        #expect {
            try encoder.encode(data: frame, out: &out)
        } throws: { error in
            guard case .frameTooLarge(let size, let limit)? = error as? WireError else { return false }
            return size > 2000 && size < 2100 && limit == 1024
        }
        #expect(out.readableBytes == 0)
        #expect(
            WireError.frameTooLarge(size: 2016, limit: 1024).description
                == "frame of 2016 bytes is over the peer's limit of 1024 bytes; send less data in one message")
    }

    @Test func frameOfExactlyThePeersLimitIsSent() throws {
        let size = try framedBytes(pingFrame(1000)).count - 1
        var out = ByteBuffer()
        try FrameEncoder(limits: FrameLimits(maxFrameSize: size)).encode(data: pingFrame(1000), out: &out)
        #expect(out.readableBytes == size + 1)
        #expect(throws: WireError.frameTooLarge(size: size, limit: size - 1)) {
            try FrameEncoder(limits: FrameLimits(maxFrameSize: size - 1)).encode(data: pingFrame(1000), out: &out)
        }
    }

    @Test func frameWithoutBodyIsRefused() {
        var out = ByteBuffer()
        #expect(throws: WireError.unsendableFrame("frame has no body")) {
            try FrameEncoder().encode(data: Baton_V1_Frame(), out: &out)
        }
        #expect(out.readableBytes == 0)
    }

    @Test func encoderAndDecoderRoundTripThroughChannels() throws {
        var launch = Baton_V1_Frame()
        launch.launchRequest.requestID = 99
        launch.launchRequest.uri = "https://example.org/ü"
        launch.launchRequest.preferredAppIds = ["a", "b"]
        launch.launchRequest.data = Baton_V1_Dictionary(["n": 1, "when": .date(Date(timeIntervalSince1970: 1))])
        let sender = EmbeddedChannel(handler: MessageToByteHandler(FrameEncoder()))
        try sender.writeOutbound(launch)
        try sender.writeOutbound(pingFrame(3))
        let receiver = decodingChannel()
        while let bytes = try sender.readOutbound(as: ByteBuffer.self) { try receiver.writeInbound(bytes) }
        #expect(try readEvents(receiver) == [.frame(launch), .frame(pingFrame(3))])
        #expect(try sender.finish().isClean)
        #expect(try receiver.finish().isClean)
    }

    @Test func limitsFromHelloAnnouncements() {
        #expect(FrameLimits(announced: 0).maxFrameSize == 1 << 20)
        #expect(FrameLimits(announced: 4096).maxFrameSize == 4096)
        #expect(FrameLimits(announced: UInt32.max).maxFrameSize == FrameLimits.hardLimit)
        #expect(FrameLimits().maxFrameSize == 1_048_576)
        #expect(FrameLimits(maxFrameSize: 0).maxFrameSize == 1)
    }
}
