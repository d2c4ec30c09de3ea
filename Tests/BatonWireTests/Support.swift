import BatonWire
import NIOCore
import NIOEmbedded

/// `frame` as BatonWire's own frames have it (for frames that convert).
func domain(_ frame: Baton_V1_Frame) -> Frame {
    try! Frame(wire: frame)
}

/// Records the largest cumulation buffer a decoder was handed.
final class BufferProbe {
    var largestReadable = 0
}

/// A ``FrameDecoder`` that reports how many bytes the handler had buffered on each call.
struct ProbingDecoder: NIOSingleStepByteToMessageDecoder {
    typealias InboundOut = FrameEvent
    var inner: FrameDecoder
    let probe: BufferProbe

    mutating func decode(buffer: inout ByteBuffer) throws -> FrameEvent? {
        probe.largestReadable = max(probe.largestReadable, buffer.readableBytes)
        return try inner.decode(buffer: &buffer)
    }

    mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> FrameEvent? {
        probe.largestReadable = max(probe.largestReadable, buffer.readableBytes)
        return try inner.decodeLast(buffer: &buffer, seenEOF: seenEOF)
    }
}

/// A channel whose inbound side is a frame decoder with `limits`.
func decodingChannel(_ limits: FrameLimits = FrameLimits()) -> EmbeddedChannel {
    EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(limits: limits)))
}

/// `bytes` in a ByteBuffer.
func buffer(_ bytes: [UInt8]) -> ByteBuffer {
    ByteBuffer(bytes: bytes)
}

/// `frame` framed, with no size limit short of the hard one.
func framed(_ frame: Baton_V1_Frame) throws -> ByteBuffer {
    var out = ByteBuffer()
    try FrameEncoder.encode(frame, into: &out, maxFrameSize: FrameLimits.hardLimit)
    return out
}

/// The bytes of `frame` framed.
func framedBytes(_ frame: Baton_V1_Frame) throws -> [UInt8] {
    Array(try framed(frame).readableBytesView)
}

/// `payload` behind its varint length prefix.
func withLengthPrefix(_ payload: [UInt8]) -> ByteBuffer {
    var out = ByteBuffer()
    Varint.write(UInt64(payload.count), into: &out)
    out.writeBytes(payload)
    return out
}

func pingFrame(_ nonce: UInt64) -> Baton_V1_Frame {
    var frame = Baton_V1_Frame()
    frame.ping.nonce = nonce
    return frame
}

/// Everything the channel has passed inbound so far.
func readEvents(_ channel: EmbeddedChannel) throws -> [FrameEvent] {
    var events: [FrameEvent] = []
    while let event = try channel.readInbound(as: FrameEvent.self) { events.append(event) }
    return events
}

/// The text of the `WireError` that `body` throws, or nil if it throws none.
func wireError(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as WireError {
        return error.description
    } catch {
        return "unexpected error: \(error)"
    }
}
