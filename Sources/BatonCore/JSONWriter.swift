/// Writes ``JSON`` into a byte buffer, which becomes one String at the end.
struct JSONWriter {
    let pretty: Bool
    let sortKeys: Bool
    var out: [UInt8] = []

    init(pretty: Bool, sortKeys: Bool) {
        self.pretty = pretty
        self.sortKeys = sortKeys
        out.reserveCapacity(256)
    }

    mutating func write(_ value: JSON, indent: Int) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): writeInteger(i)
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .array(let elements):
            guard !elements.isEmpty else { return append("[]") }
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                write(element, indent: indent + 1)
            }
            newline(indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { return append("{}") }
            let ordered = sortKeys ? members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : members
            out.append(UInt8(ascii: "{"))
            for (i, member) in ordered.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                writeString(member.key)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(UInt8(ascii: " ")) }
                write(member.value, indent: indent + 1)
            }
            newline(indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    private mutating func append(_ s: StaticString) {
        s.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private mutating func newline(_ indent: Int) {
        guard pretty else { return }
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private mutating func writeInteger(_ i: Int64) {
        if i < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    private mutating func writeDouble(_ d: Double) {
        precondition(d.isFinite, "JSON cannot represent \(d)")
        // Swift's description is the shortest form that reads back to the same Double.
        let text = d.description.utf8
        out.append(contentsOf: text)
        if !text.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            append(".0")
        }
    }

    private mutating func writeString(_ s: String) {
        out.append(UInt8(ascii: "\""))
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { writeEscaped($0) }
        if done == nil {
            Array(s.utf8).withUnsafeBufferPointer { writeEscaped($0) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Copies runs that need no escaping in one go.
    private mutating func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var i = 0
        let count = bytes.count
        while i < count {
            let byte = bytes[i]
            if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte != 0xE2 {
                i += 1
                continue
            }
            var length = 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                flush(bytes, runStart, i)
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x0A: flush(bytes, runStart, i); append("\\n")
            case 0x0D: flush(bytes, runStart, i); append("\\r")
            case 0x09: flush(bytes, runStart, i); append("\\t")
            case 0x08: flush(bytes, runStart, i); append("\\b")
            case 0x0C: flush(bytes, runStart, i); append("\\f")
            case 0xE2:
                // U+2028 and U+2029 are valid JSON but end lines in JavaScript.
                guard i + 2 < count, bytes[i + 1] == 0x80, bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9 else {
                    i += 1
                    continue
                }
                flush(bytes, runStart, i)
                append(bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029")
                length = 3
            default:
                flush(bytes, runStart, i)
                append("\\u00")
                out.append(Self.hexDigits[Int(byte >> 4)])
                out.append(Self.hexDigits[Int(byte & 0xF)])
            }
            i += length
            runStart = i
        }
        flush(bytes, runStart, count)
    }

    private mutating func flush(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) {
        if start < end { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end])) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
