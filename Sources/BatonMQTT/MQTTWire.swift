import NIOCore

/// MQTT's primitive types (spec §1.5): integers, variable byte integers, UTF-8 strings and
/// binary data, each read with a bounds check that throws instead of trapping.
enum MQTTWire {
    static func readInteger<T: FixedWidthInteger>(from buffer: inout ByteBuffer) throws -> T {
        guard let v = buffer.readInteger(as: T.self) else {
            throw MQTTError.malformed("packet ends inside a \(T.bitWidth / 8)-byte integer")
        }
        return v
    }

    /// At most four bytes, at most 268,435,455.
    static func readVariableInteger(from buffer: inout ByteBuffer) throws -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 {
            guard let byte = buffer.readInteger(as: UInt8.self) else {
                throw MQTTError.malformed("packet ends inside a variable byte integer")
            }
            value |= UInt32(byte & 0x7F) << (7 * index)
            if byte & 0x80 == 0 { return value }
        }
        throw MQTTError.malformed("variable byte integer longer than four bytes")
    }

    /// Peeks a variable byte integer at the reader index: nil while more bytes are needed.
    static func peekVariableInteger(in buffer: ByteBuffer, at offset: Int) throws -> (value: Int, size: Int)? {
        var value = 0
        for index in 0..<4 {
            guard let byte = buffer.getInteger(at: buffer.readerIndex + offset + index, as: UInt8.self) else {
                return nil
            }
            value |= Int(byte & 0x7F) << (7 * index)
            if byte & 0x80 == 0 { return (value, index + 1) }
        }
        throw MQTTError.malformed("remaining length longer than four bytes")
    }

    static func variableIntegerSize(_ value: Int) -> Int {
        value < 128 ? 1 : value < 16_384 ? 2 : value < 2_097_152 ? 3 : 4
    }

    static func writeVariableInteger(_ value: Int, to buffer: inout ByteBuffer) {
        var rest = value
        repeat {
            var byte = UInt8(rest & 0x7F)
            rest >>= 7
            if rest > 0 { byte |= 0x80 }
            buffer.writeInteger(byte)
        } while rest > 0
    }

    /// A UTF-8 string: valid UTF-8 and no U+0000 (spec §1.5.4), else malformed.
    static func readString(from buffer: inout ByteBuffer) throws -> String {
        let length: UInt16 = try readInteger(from: &buffer)
        guard let view = buffer.readSlice(length: Int(length)) else {
            throw MQTTError.malformed("string of \(length) bytes runs past the packet")
        }
        guard let string = view.getString(at: view.readerIndex, length: view.readableBytes),
              string.utf8.elementsEqual(view.readableBytesView),
              !string.utf8.contains(0)
        else {
            throw MQTTError.malformed("string is not valid UTF-8 (or holds U+0000)")
        }
        return string
    }

    static func readBinary(from buffer: inout ByteBuffer) throws -> [UInt8] {
        let length: UInt16 = try readInteger(from: &buffer)
        guard let bytes = buffer.readBytes(length: Int(length)) else {
            throw MQTTError.malformed("binary data of \(length) bytes runs past the packet")
        }
        return bytes
    }

    static func writeString(_ string: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(truncatingIfNeeded: string.utf8.count))
        buffer.writeString(string)
    }

    static func writeBinary(_ bytes: [UInt8], to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt16(truncatingIfNeeded: bytes.count))
        buffer.writeBytes(bytes)
    }
}
