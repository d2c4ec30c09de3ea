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
        try FrameEncoder.encode(domain(pingFrame(1)), into: &out, maxFrameSize: FrameLimits.defaultMaxFrameSize)
        // Ping (field 12, length-delimited) holding nonce (field 1) = 1.
        #expect(Array(out.readableBytesView) == [0x04, 0x62, 0x02, 0x08, 0x01])
    }

    @Test func longPayloadGetsMultiByteLength() throws {
        var frame = Baton_V1_Frame()
        frame.launchRequest.uri = String(repeating: "u", count: 300)
        var out = ByteBuffer()
        try FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.defaultMaxFrameSize)
        var copy = out
        let length = try #require(try Varint.read(from: &copy))
        #expect(Int(length) == copy.readableBytes)
        #expect(length > 300)
        #expect(Varint.encodedLength(length) == 2)
    }

    @Test func frameOverThePeersLimitIsRefusedAndNothingWritten() throws {
        let frame = Frame.serviceRequest(channelID: 0, requestID: 0, message: ServiceMessage(["blob": .bytes(Array(repeating: 1, count: 2000))]), timeout: 0)
        var out = ByteBuffer()
        #expect {
            try FrameEncoder.encode(frame, into: &out, maxFrameSize: 1024)
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
        try FrameEncoder.encode(domain(pingFrame(1000)), into: &out, maxFrameSize: size)
        #expect(out.readableBytes == size + 1)
        #expect(throws: WireError.frameTooLarge(size: size, limit: size - 1)) {
            try FrameEncoder.encode(domain(pingFrame(1000)), into: &out, maxFrameSize: size - 1)
        }
    }

    @Test func frameWithoutBodyIsRefused() {
        var out = ByteBuffer()
        #expect(throws: WireError.unsendableFrame("frame has no body")) {
            try FrameEncoder.encode(Baton_V1_Frame(), into: &out, maxFrameSize: FrameLimits.defaultMaxFrameSize)
        }
        #expect(out.readableBytes == 0)
    }

    @Test func encoderAndDecoderRoundTripThroughAChannel() throws {
        let request = LaunchRequest(
            uri: "https://example.org/ü", preferredAppIDs: ["a", "b"], data: ["n": 1, "when": .date(Date(timeIntervalSince1970: 1))])
        let frames: [Frame] = [
            .launchRequest(requestID: 99, .success(request), timeout: 0), .ping(nonce: 3),
            .serviceRequest(channelID: 1, requestID: 2, message: ServiceMessage(["k": "v"]), timeout: 0),
            .serviceResponse(channelID: 1, requestID: 2, reply: .success(["list": .array([1, 2])])),
        ]
        var bytes = ByteBuffer()
        for frame in frames { try FrameEncoder.encode(frame, into: &bytes, maxFrameSize: FrameLimits.defaultMaxFrameSize) }
        let receiver = decodingChannel()
        try receiver.writeInbound(bytes)
        #expect(try readEvents(receiver) == frames.map { .frame($0) })
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
