import NIOCore

/// Splits a byte stream into frames (Protocol/baton.proto, FRAMING): an unsigned varint length,
/// then that many bytes of one serialized `Frame`.
///
/// ``decode(buffer:)`` takes one ``FrameEvent`` at a time off the front of a buffer (a link
/// calls it directly; `ByteToMessageHandler(FrameDecoder(limits:))` works too). A frame
/// over ``FrameLimits/maxFrameSize`` is never buffered: once its first 64 bytes are here it
/// fires ``FrameEvent/oversized(_:)`` with what they show, then discards the rest of its
/// payload as it arrives. Anything that breaks the framing rules throws
/// ``WireError/protocolError(_:)``.
public struct FrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = FrameEvent

    /// The limits this side announced.
    public let limits: FrameLimits

    /// Payload bytes of an oversized frame still to be discarded.
    private var bytesToSkip = 0

    public init(limits: FrameLimits = FrameLimits()) {
        self.limits = limits
    }

    /// The next event at the front of `buffer`, consuming its bytes; nil when more bytes are
    /// needed. Discards oversized payload bytes on the way.
    public mutating func decode(buffer: inout ByteBuffer) throws(WireError) -> FrameEvent? {
        if bytesToSkip > 0 {
            skip(&buffer)
            if bytesToSkip > 0 { return nil }
        }
        guard buffer.readableBytes > 0 else { return nil }

        let length: Int
        let prefixLength: Int
        switch Varint.peek(buffer) {
        case .incomplete:
            return nil
        case .tooLong:
            throw .protocolError("frame length prefix longer than 10 bytes")
        case .overflow:
            throw .protocolError("frame length prefix does not fit in 64 bits")
        case .value(let value, let n):
            guard value != 0 else { throw .protocolError("empty frame") }
            guard value <= UInt64(FrameLimits.hardLimit) else {
                throw .protocolError("frame length \(value) over the 1 GiB hard limit")
            }
            length = Int(value)
            prefixLength = n
        }

        if length > limits.maxFrameSize {
            let peek = min(length, OversizedFrame.peekLength)
            guard buffer.readableBytes >= prefixLength + peek else { return nil }
            let view = buffer.withUnsafeReadableBytes { bytes in
                OversizedFrame(
                    length: length, prefix: UnsafeRawBufferPointer(rebasing: bytes[prefixLength..<prefixLength + peek]))
            }
            buffer.moveReaderIndex(forwardBy: prefixLength)
            bytesToSkip = length
            skip(&buffer)
            return .oversized(view)
        }

        guard buffer.readableBytes >= prefixLength + length else { return nil }
        let frame = buffer.withUnsafeReadableBytes { bytes -> Result<Frame, WireError> in
            Result { () throws(WireError) in
                try Frame(payload: UnsafeRawBufferPointer(rebasing: bytes[prefixLength..<prefixLength + length]))
            }
        }
        buffer.moveReaderIndex(forwardBy: prefixLength + length)
        return .frame(try frame.get())
    }

    /// As ``decode(buffer:)``; at EOF, bytes of an unfinished frame are a protocol error.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws(WireError) -> FrameEvent? {
        if let event = try decode(buffer: &buffer) { return event }
        if seenEOF, buffer.readableBytes > 0 || bytesToSkip > 0 {
            throw .protocolError("connection closed in the middle of a frame")
        }
        return nil
    }

    /// Discards as much of the oversized payload as `buffer` holds.
    private mutating func skip(_ buffer: inout ByteBuffer) {
        let n = min(bytesToSkip, buffer.readableBytes)
        buffer.moveReaderIndex(forwardBy: n)
        bytesToSkip -= n
    }
}
