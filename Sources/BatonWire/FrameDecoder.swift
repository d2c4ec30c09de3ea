import NIOCore

/// Splits a byte stream into frames (Protocol/baton.proto, FRAMING): an unsigned varint length,
/// then that many bytes of one serialized `Frame`.
///
/// Use it as `ByteToMessageHandler(FrameDecoder(limits:))`; it fires ``FrameEvent``s. A frame
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

    /// What ``decodeConvertingMessages(buffer:seenEOF:)`` finds: service frames with their
    /// messages already converted to Values, anything else as ``decode(buffer:)`` gives it.
    package enum Decoded: Sendable, Equatable {
        case event(FrameEvent)
        case serviceRequest(ServiceRequestFrame)
        case serviceResponse(ServiceResponseFrame)
    }

    /// The next event at the front of `buffer`, consuming its bytes; nil when more bytes are
    /// needed. Discards oversized payload bytes on the way.
    public mutating func decode(buffer: inout ByteBuffer) throws(WireError) -> FrameEvent? {
        guard let decoded = try next(&buffer, convertingMessages: false) else { return nil }
        guard case .event(let event) = decoded else { preconditionFailure("a service frame converted unasked") }
        return event
    }

    /// As ``decode(buffer:)`` (``decodeLast(buffer:seenEOF:)`` when `seenEOF`), but a
    /// ServiceRequest or ServiceResponse comes with its message read straight into Values (or
    /// why it breaks the Value rules), the common form without the generated types in between.
    package mutating func decodeConvertingMessages(buffer: inout ByteBuffer, seenEOF: Bool) throws(WireError) -> Decoded? {
        if let decoded = try next(&buffer, convertingMessages: true) { return decoded }
        try checkEnd(buffer, seenEOF: seenEOF)
        return nil
    }

    private mutating func next(_ buffer: inout ByteBuffer, convertingMessages: Bool) throws(WireError) -> Decoded? {
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
            return .event(.oversized(view))
        }

        guard buffer.readableBytes >= prefixLength + length else { return nil }
        if convertingMessages, let decoded = Self.serviceFrame(buffer, from: prefixLength, length: length) {
            buffer.moveReaderIndex(forwardBy: prefixLength + length)
            return decoded
        }
        let parsed = buffer.withUnsafeReadableBytes { bytes -> Result<Baton_V1_Frame, ProtoReader.Malformed> in
            Result { () throws(ProtoReader.Malformed) in
                try Baton_V1_Frame(wireBytes: UnsafeRawBufferPointer(rebasing: bytes[prefixLength..<prefixLength + length]))
            }
        }
        buffer.moveReaderIndex(forwardBy: prefixLength + length)
        let frame: Baton_V1_Frame
        switch parsed {
        case .success(let parsedFrame): frame = parsedFrame
        case .failure(let error): throw .protocolError("malformed frame of \(length) bytes: \(error)")
        }
        guard let body = frame.body else { throw .protocolError("frame of unknown type") }
        if convertingMessages {
            switch body {
            case .serviceRequest(let request): return .serviceRequest(ServiceRequestFrame(wire: request))
            case .serviceResponse(let response): return .serviceResponse(ServiceResponseFrame(wire: response))
            default: break
            }
        }
        return .event(.frame(frame))
    }

    /// The common service frame read straight into Values, or nil for the general path.
    private static func serviceFrame(_ buffer: ByteBuffer, from offset: Int, length: Int) -> Decoded? {
        // The Frame's first byte: the tag of field 9 (ServiceRequest) or 10, length-delimited.
        guard let first = buffer.getInteger(at: buffer.readerIndex + offset, as: UInt8.self),
              first == 0x4A || first == 0x52 else { return nil }
        return buffer.withUnsafeReadableBytes { bytes -> Decoded? in
            let payload = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
            if first == 0x4A {
                return ServiceFrameReader.request(payload).map(Decoded.serviceRequest)
            }
            return ServiceFrameReader.response(payload).map(Decoded.serviceResponse)
        }
    }

    /// As ``decode(buffer:)``; at EOF, bytes of an unfinished frame are a protocol error.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws(WireError) -> FrameEvent? {
        if let event = try decode(buffer: &buffer) { return event }
        try checkEnd(buffer, seenEOF: seenEOF)
        return nil
    }

    /// At EOF, with nothing more to decode: bytes of an unfinished frame are a protocol error.
    private func checkEnd(_ buffer: ByteBuffer, seenEOF: Bool) throws(WireError) {
        if seenEOF, buffer.readableBytes > 0 || bytesToSkip > 0 {
            throw .protocolError("connection closed in the middle of a frame")
        }
    }

    /// Discards as much of the oversized payload as `buffer` holds.
    private mutating func skip(_ buffer: inout ByteBuffer) {
        let n = min(bytesToSkip, buffer.readableBytes)
        buffer.moveReaderIndex(forwardBy: n)
        bytesToSkip -= n
    }
}
