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
        var offset = scanned
        while offset < bytes.readableBytes {
            let byte = bytes.getInteger(at: bytes.readerIndex + offset, as: UInt8.self) ?? 0
            offset += 1
            if depth == 0 {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                    // Whitespace between objects: let it go.
                    bytes.moveReaderIndex(forwardBy: 1)
                    offset = 0
                case UInt8(ascii: "{"):
                    depth = 1
                default:
                    throw .notAnObject(byte)
                }
            } else if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                default: break
                }
                if depth == 0 {
                    scanned = 0
                    return bytes.readSlice(length: offset)
                }
            }
            guard offset <= Self.maxObjectBytes else { throw .tooLong }
        }
        scanned = offset
        return nil
    }

    /// Lets go of the objects read.
    mutating func compact() {
        bytes.discardReadBytes()
    }
}
