import BatonCore
import BatonWire
import NIOCore
import NIOEmbedded
import Testing

/// A LaunchRequest carrying about `dataSize` bytes of launch data.
private func launchFrame(requestID: UInt64, dataSize: Int) -> Baton_V1_Frame {
    var launch = Baton_V1_LaunchRequest()
    launch.requestID = requestID
    launch.uri = "demo://play"
    launch.data = Baton_V1_Dictionary(["blob": .bytes(Array(repeating: 0xAB, count: dataSize))])
    var frame = Baton_V1_Frame()
    frame.launchRequest = launch
    return frame
}

/// A ServiceRequest on `channelID` carrying about `messageSize` bytes.
private func serviceFrame(channelID: UInt64, requestID: UInt64, messageSize: Int) -> Baton_V1_Frame {
    var request = Baton_V1_ServiceRequest()
    request.channelID = channelID
    request.requestID = requestID
    request.message = Baton_V1_Dictionary(["text": .string(String(repeating: "x", count: messageSize))])
    var frame = Baton_V1_Frame()
    frame.serviceRequest = request
    return frame
}

/// Writes `bytes` to `channel` in chunks of `size`.
private func feed(_ channel: EmbeddedChannel, _ bytes: [UInt8], chunk size: Int) throws {
    var start = 0
    while start < bytes.count {
        let end = min(start + size, bytes.count)
        try channel.writeInbound(buffer(Array(bytes[start..<end])))
        start = end
    }
}

@Suite("Frame decoder")
struct FrameDecoderTests {
    @Test func decodesFrameSplitByteByByte() throws {
        var hello = Baton_V1_Frame()
        hello.hello.protocolVersion = 1
        hello.hello.deviceName = "Küche 🍳"
        hello.hello.maxFrameSize = 4096
        let first = try framedBytes(hello)
        let bytes = try first + framedBytes(pingFrame(9))
        let channel = decodingChannel()
        var events: [FrameEvent] = []
        var completedAt: [Int] = []
        for (offset, byte) in bytes.enumerated() {
            try channel.writeInbound(buffer([byte]))
            let new = try readEvents(channel)
            if !new.isEmpty { completedAt.append(offset) }
            events += new
        }
        // Each frame comes out on its last byte, not before.
        #expect(completedAt == [first.count - 1, bytes.count - 1])
        #expect(events == [.frame(domain(hello)), .frame(domain(pingFrame(9)))])
        #expect(try channel.finish().isClean)
    }

    @Test func decodesSeveralFramesInOneBuffer() throws {
        var goodbye = Baton_V1_Frame()
        goodbye.goodbye.reason = .shutdown
        goodbye.goodbye.detail = "bye"
        let frames = [pingFrame(1), goodbye, pingFrame(UInt64.max)]
        var all = ByteBuffer()
        for frame in frames { all.writeImmutableBuffer(try framed(frame)) }
        let channel = decodingChannel()
        try channel.writeInbound(all)
        #expect(try readEvents(channel) == frames.map { .frame(domain($0)) })
        #expect(try channel.finish().isClean)
    }

    @Test func frameOfExactlyTheLimitIsDecoded() throws {
        let frame = serviceFrame(channelID: 1, requestID: 2, messageSize: 1000)
        let bytes = try framedBytes(frame)
        let payloadLength = bytes.count - Varint.encodedLength(UInt64(bytes.count))
        let channel = decodingChannel(FrameLimits(maxFrameSize: payloadLength))
        try channel.writeInbound(buffer(bytes))
        #expect(try readEvents(channel) == [.frame(domain(frame))])
    }

    @Test func garbageBytesAreAMalformedFrame() throws {
        let channel = decodingChannel()
        let error = wireError { try channel.writeInbound(withLengthPrefix([0xFF, 0xFF, 0xFF, 0xFF, 0xFF])) }
        #expect(error?.hasPrefix("protocol error: malformed frame of 5 bytes: ") == true, "\(error ?? "no error")")
        #expect(try readEvents(channel).isEmpty)
    }

    @Test func truncatedFrameThenEOFIsAProtocolError() throws {
        let bytes = try framedBytes(pingFrame(77))
        let channel = decodingChannel()
        try channel.writeInbound(buffer(Array(bytes.dropLast())))
        #expect(try readEvents(channel).isEmpty)
        #expect(wireError { _ = try channel.finish() } == "protocol error: connection closed in the middle of a frame")
    }

    @Test func eofBetweenFramesIsClean() throws {
        let channel = decodingChannel()
        try channel.writeInbound(try framed(pingFrame(1)))
        #expect(try readEvents(channel) == [.frame(domain(pingFrame(1)))])
        #expect(try channel.finish().isClean)
    }

    @Test func elevenByteLengthPrefixIsAProtocolError() {
        let channel = decodingChannel()
        let prefix: [UInt8] = Array(repeating: 0x80, count: 10) + [0x01]
        #expect(
            wireError { try channel.writeInbound(buffer(prefix)) }
                == "protocol error: frame length prefix longer than 10 bytes")
    }

    @Test func tenContinuationBytesAreRefusedBeforeAnEleventhArrives() throws {
        let channel = decodingChannel()
        try channel.writeInbound(buffer(Array(repeating: 0x80, count: 9)))
        #expect(
            wireError { try channel.writeInbound(buffer([0x80])) }
                == "protocol error: frame length prefix longer than 10 bytes")
    }

    @Test func zeroLengthIsAProtocolError() {
        let channel = decodingChannel()
        #expect(wireError { try channel.writeInbound(buffer([0x00])) } == "protocol error: empty frame")
    }

    @Test func lengthOverTheHardLimitIsAProtocolError() {
        let channel = decodingChannel()
        var prefix = ByteBuffer()
        Varint.write(1 << 40, into: &prefix)
        #expect(
            wireError { try channel.writeInbound(prefix) }
                == "protocol error: frame length 1099511627776 over the 1 GiB hard limit")
        let justOver = decodingChannel()
        var over = ByteBuffer()
        Varint.write(UInt64(FrameLimits.hardLimit) + 1, into: &over)
        #expect(
            wireError { try justOver.writeInbound(over) }
                == "protocol error: frame length 1073741825 over the 1 GiB hard limit")
    }

    @Test func unknownFrameFieldIsAProtocolError() {
        // Field 99, varint 1: a body this side does not know.
        let channel = decodingChannel()
        #expect(
            wireError { try channel.writeInbound(withLengthPrefix([0x98, 0x06, 0x01])) }
                == "protocol error: frame of unknown type")
    }

    @Test func frameWithoutBodyIsAProtocolError() {
        // Only an unknown length-delimited field 20: parses, but no body is set.
        let channel = decodingChannel()
        #expect(
            wireError { try channel.writeInbound(withLengthPrefix([0xA2, 0x01, 0x00])) }
                == "protocol error: frame of unknown type")
    }

    @Test func oversizedLaunchRequestIsSkippedInChunksWithoutBuffering() throws {
        let big = try framedBytes(launchFrame(requestID: 7, dataSize: 2 << 20))
        let payloadLength = big.count - Varint.encodedLength(UInt64(big.count))
        #expect(payloadLength > 2 << 20)
        let probe = BufferProbe()
        let chunk = 64 * 1024
        // A decoder that held on to the payload would also trip the handler's own cap.
        let channel = EmbeddedChannel(
            handler: ByteToMessageHandler(
                ProbingDecoder(inner: FrameDecoder(), probe: probe), maximumBufferSize: 2 * chunk))
        var events: [FrameEvent] = []
        try feed(channel, big + framedBytes(pingFrame(5)), chunk: chunk)
        events += try readEvents(channel)
        #expect(
            events == [
                .oversized(OversizedFrame(kind: .launchRequest, requestID: 7, length: payloadLength, fieldNumber: 5)),
                .frame(domain(pingFrame(5))),
            ])
        #expect(probe.largestReadable <= chunk + 16, "largest buffer \(probe.largestReadable) bytes")
        #expect(try channel.finish().isClean)
    }

    @Test func oversizedFrameIsReportedOnceItsFirstBytesArrive() throws {
        let big = try framedBytes(launchFrame(requestID: 42, dataSize: 2 << 20))
        let channel = decodingChannel()
        // Prefix (4 bytes) + 63 payload bytes: not enough to peek.
        try channel.writeInbound(buffer(Array(big[0..<67])))
        #expect(try readEvents(channel).isEmpty)
        try channel.writeInbound(buffer([big[67]]))
        let events = try readEvents(channel)
        #expect(events.count == 1)
        guard case .oversized(let view)? = events.first else { return }
        #expect(view.kind == .launchRequest)
        #expect(view.requestID == 42)
    }

    @Test func oversizedServiceRequestShowsChannelAndRequest() throws {
        let big = try framedBytes(serviceFrame(channelID: 3, requestID: 300, messageSize: 2 << 20))
        let payloadLength = big.count - Varint.encodedLength(UInt64(big.count))
        let channel = decodingChannel()
        try feed(channel, big + framedBytes(pingFrame(6)), chunk: 64 * 1024)
        #expect(
            try readEvents(channel) == [
                .oversized(
                    OversizedFrame(
                        kind: .serviceRequest, requestID: 300, channelID: 3, length: payloadLength, fieldNumber: 9)),
                .frame(domain(pingFrame(6))),
            ])
    }

    @Test func oversizedOpenServiceRequestShowsRequestAndChannel() throws {
        var frame = Baton_V1_Frame()
        frame.openServiceRequest.requestID = 11
        frame.openServiceRequest.channelID = 12
        frame.openServiceRequest.serviceName = String(repeating: "s", count: 200)
        let bytes = try framedBytes(frame)
        let channel = decodingChannel(FrameLimits(maxFrameSize: 100))
        try channel.writeInbound(buffer(bytes))
        let events = try readEvents(channel)
        guard case .oversized(let view)? = events.first else {
            Issue.record("expected an oversized frame, got \(events)")
            return
        }
        #expect(view.kind == .openServiceRequest)
        #expect(view.requestID == 11)
        #expect(view.channelID == 12)
    }

    @Test func oversizedDescribeRequestShowsRequest() throws {
        var frame = Baton_V1_Frame()
        frame.describeRequest.requestID = 1234
        let channel = decodingChannel(FrameLimits(maxFrameSize: 2))
        try channel.writeInbound(try framed(frame))
        #expect(
            try readEvents(channel) == [
                .oversized(OversizedFrame(kind: .describeRequest, requestID: 1234, length: 5, fieldNumber: 3))
            ])
    }

    @Test func omittedZeroRequestIDReadsAsZero() throws {
        // proto3 writes no request_id 0: the body starts with uri (field 2).
        let big = try framedBytes(launchFrame(requestID: 0, dataSize: 2 << 20))
        let channel = decodingChannel()
        try feed(channel, big, chunk: 64 * 1024)
        let events = try readEvents(channel)
        guard case .oversized(let view)? = events.first else {
            Issue.record("expected an oversized frame, got \(events)")
            return
        }
        #expect(view.kind == .launchRequest)
        #expect(view.requestID == 0)
    }

    @Test func oversizedPingShowsNoRequest() throws {
        let bytes = try framedBytes(pingFrame(123_456_789))
        let payloadLength = bytes.count - 1
        let channel = decodingChannel(FrameLimits(maxFrameSize: 4))
        try channel.writeInbound(buffer(bytes) )
        try channel.writeInbound(try framed(pingFrame(1)))
        #expect(
            try readEvents(channel) == [
                .oversized(OversizedFrame(kind: .other, requestID: nil, channelID: nil, length: payloadLength, fieldNumber: 12)),
                .frame(domain(pingFrame(1))),
            ])
    }

    @Test func oversizedGarbageIsKindOther() throws {
        var bytes = ByteBuffer()
        Varint.write(200, into: &bytes)
        bytes.writeBytes(Array(repeating: UInt8(0xFF), count: 200))
        let channel = decodingChannel(FrameLimits(maxFrameSize: 100))
        try channel.writeInbound(bytes)
        #expect(try readEvents(channel) == [.oversized(OversizedFrame(kind: .other, length: 200))])
    }

    @Test func eofInsideASkippedFrameIsAProtocolError() throws {
        let big = try framedBytes(launchFrame(requestID: 7, dataSize: 2 << 20))
        let channel = decodingChannel()
        try feed(channel, Array(big[..<(1 << 20)]), chunk: 64 * 1024)
        #expect(try readEvents(channel).count == 1)
        #expect(wireError { _ = try channel.finish() } == "protocol error: connection closed in the middle of a frame")
    }

    @Test func deeplyNestedMessageReachesValueValidation() throws {
        // 70 dictionaries deep: over Value's 64-level limit but within what the parser takes, so
        // the receiver can refuse the message by path and keep the connection.
        var inner = ValueDictionary(["leaf": 1])
        for _ in 0..<69 { inner = ["d": .dictionary(inner)] }
        var frame = Baton_V1_Frame()
        frame.serviceRequest.channelID = 1
        frame.serviceRequest.requestID = 2
        frame.serviceRequest.message = Baton_V1_Dictionary(inner)
        let channel = decodingChannel()
        try channel.writeInbound(try framed(frame))
        let events = try readEvents(channel)
        guard case .frame(.serviceRequest(_, _, let message, _))? = events.first else {
            Issue.record("expected a service request, got \(events)")
            return
        }
        #expect(message.values == .failure(ValueError(path: "message" + String(repeating: ".d", count: 30), reason: "nested deeper than 30 levels")))
    }
}
