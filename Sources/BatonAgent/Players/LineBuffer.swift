import NIOCore

/// The newline-ended lines of a byte stream, as the players' text protocols send them (mpv's
/// JSON IPC, MPD's): bytes go in as they arrive, whole lines come out without their newline.
struct LineBuffer {
    /// A player's lines are short; one longer than this is not the player talking.
    static let maxLineLength = 1 << 20

    private var bytes = ByteBuffer()

    mutating func append(_ buffer: inout ByteBuffer) {
        bytes.writeBuffer(&buffer)
    }

    /// The next whole line, without its newline; nil until one has come.
    mutating func nextLine() -> ByteBuffer? {
        guard let newline = bytes.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let line = bytes.readSlice(length: newline - bytes.readerIndex)
        bytes.moveReaderIndex(forwardBy: 1)
        return line
    }

    /// Lets go of the lines read; true when what is left, not a line yet, is already longer
    /// than ``maxLineLength``.
    mutating func compactIsOverlong() -> Bool {
        bytes.discardReadBytes()
        return bytes.readableBytes > Self.maxLineLength
    }
}
