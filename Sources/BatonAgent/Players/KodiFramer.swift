import NIOCore

/// The JSON objects of Kodi's raw TCP JSON-RPC stream (port 9090), which sends them back to back
/// with no delimiter: bytes go in as they arrive, whole objects come out, found by counting
/// braces outside strings (escapes honored). Plain values, no I/O: ``KodiConnection`` feeds it.
struct KodiFramer {
    /// The largest object taken; a longer one is not Kodi answering.
    static let maxObjectBytes = 1 << 20

    /// Why the stream cannot be Kodi's.
    enum Failure: Error, Equatable {
        /// A byte between objects that is neither whitespace nor `{`.
        case notAnObject(UInt8)
        /// An object still open after ``maxObjectBytes``.
        case tooLong
    }

    private var bytes = ByteBuffer()
    /// How far past the reader index the scan has gone, and its state there.
    private var scanned = 0
    private var depth = 0
    private var inString = false
    private var escaped = false

    mutating func append(_ buffer: inout ByteBuffer) {
        bytes.writeBuffer(&buffer)
    }

    /// The next whole object, braces included; nil until one has come.
    ///
    /// - Throws: ``Failure`` when the stream holds something other than objects, or an object
    ///   longer than ``maxObjectBytes``.
    mutating func nextObject() throws(Failure) -> ByteBuffer? {
        // Whitespace between objects is let go of first.
        let blank = bytes.withUnsafeReadableBytes { raw in
            scanned > 0 ? 0 : raw.prefix { [0x20, 0x0A, 0x0D, 0x09].contains($0) }.count
        }
        bytes.moveReaderIndex(forwardBy: blank)
        var state = (depth: depth, inString: inString, escaped: escaped)
        let scan: Result<Int?, Failure> = bytes.withUnsafeReadableBytes { raw in
            var offset = scanned
            while offset < raw.count {
                let byte = raw[offset]
                offset += 1
                if state.depth == 0 {
                    guard byte == UInt8(ascii: "{") else { return .failure(.notAnObject(byte)) }
                    state.depth = 1
                } else if state.inString {
                    if state.escaped {
                        state.escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        state.escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        state.inString = false
                    }
                } else {
                    switch byte {
                    case UInt8(ascii: "\""): state.inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["): state.depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): state.depth -= 1
                    default: break
                    }
                    if state.depth == 0 { return .success(offset) }
                }
                guard offset <= Self.maxObjectBytes else { return .failure(.tooLong) }
            }
            return .success(nil)
        }
        (depth, inString, escaped) = state
        switch scan {
        case .failure(let failure):
            throw failure
        case .success(let length?):
            scanned = 0
            return bytes.readSlice(length: length)
        case .success(nil):
            scanned = bytes.readableBytes
            return nil
        }
    }

    /// Lets go of the objects read.
    mutating func compact() {
        bytes.discardReadBytes()
    }
}
