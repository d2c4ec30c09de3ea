/// The strict RFC 8259 parser behind ``JSON/parse(_:)``.
///
/// It works on raw UTF-8 bytes and is iterative, keeping open containers on its own stack,
/// so deep documents cannot exhaust the thread's stack before the depth limit is reached.
struct JSONParser {
    /// Deepest nesting of arrays and objects accepted.
    static let maxDepth = 512

    private let input: UnsafeBufferPointer<UInt8>
    private var pos = 0
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    init(_ input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    /// An array or object still being filled.
    private struct Frame {
        var isObject: Bool
        var elements: [JSON] = []
        var members: [JSON.Member] = []
        /// Key of the member whose value is being parsed.
        var key = ""
        /// Built once an object is large enough that scanning for repeated keys would be slow.
        var index: [String: Int]? = nil

        mutating func addMember(_ key: String, _ value: JSON) {
            if index != nil {
                if let existing = index![key] {
                    members[existing].value = value
                } else {
                    index![key] = members.count
                    members.append(JSON.Member(key, value))
                }
                return
            }
            for i in members.indices where members[i].key == key {
                members[i].value = value
                return
            }
            members.append(JSON.Member(key, value))
            if members.count >= 16 {
                var built: [String: Int] = [:]
                built.reserveCapacity(members.count * 2)
                for (i, member) in members.enumerated() { built[member.key] = i }
                index = built
            }
        }
    }

    mutating func parseDocument() throws(JSONError) -> JSON {
        var stack: [Frame] = []
        skipWhitespace()
        parsing: while true {
            // Here a value must start at `pos`.
            var value: JSON
            guard pos < input.count else { throw error("unexpected end of input", at: pos) }
            switch input[pos] {
            case UInt8(ascii: "{"):
                guard stack.count < Self.maxDepth else {
                    throw error("nesting deeper than \(Self.maxDepth) levels", at: pos)
                }
                pos += 1
                skipWhitespace()
                if pos < input.count, input[pos] == UInt8(ascii: "}") {
                    pos += 1
                    value = .object([])
                } else {
                    var frame = Frame(isObject: true)
                    frame.key = try parseKey(orElse: "expected string key or '}'")
                    stack.append(frame)
                    continue parsing
                }
            case UInt8(ascii: "["):
                guard stack.count < Self.maxDepth else {
                    throw error("nesting deeper than \(Self.maxDepth) levels", at: pos)
                }
                pos += 1
                skipWhitespace()
                if pos < input.count, input[pos] == UInt8(ascii: "]") {
                    pos += 1
                    value = .array([])
                } else {
                    stack.append(Frame(isObject: false))
                    continue parsing
                }
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                value = try parseLiteral()
            default:
                throw unexpectedCharacter(at: pos)
            }

            // A value is complete: hand it to its container, closing containers as they end.
            while true {
                skipWhitespace()
                guard !stack.isEmpty else {
                    guard pos == input.count else {
                        throw error("trailing characters after JSON value", at: pos)
                    }
                    return value
                }
                let top = stack.count - 1
                if stack[top].isObject {
                    stack[top].addMember(stack[top].key, value)
                    guard pos < input.count else { throw error("unexpected end of input", at: pos) }
                    switch input[pos] {
                    case UInt8(ascii: ","):
                        pos += 1
                        skipWhitespace()
                        if pos < input.count, input[pos] == UInt8(ascii: "}") {
                            throw error("trailing comma in object", at: pos)
                        }
                        stack[top].key = try parseKey(orElse: "expected string key")
                        continue parsing
                    case UInt8(ascii: "}"):
                        pos += 1
                        value = .object(stack.removeLast().members)
                    default:
                        throw error("expected ',' or '}' after object member", at: pos)
                    }
                } else {
                    stack[top].elements.append(value)
                    guard pos < input.count else { throw error("unexpected end of input", at: pos) }
                    switch input[pos] {
                    case UInt8(ascii: ","):
                        pos += 1
                        skipWhitespace()
                        if pos < input.count, input[pos] == UInt8(ascii: "]") {
                            throw error("trailing comma in array", at: pos)
                        }
                        continue parsing
                    case UInt8(ascii: "]"):
                        pos += 1
                        value = .array(stack.removeLast().elements)
                    default:
                        throw error("expected ',' or ']' after array element", at: pos)
                    }
                }
            }
        }
    }

    // MARK: - Tokens

    private mutating func skipWhitespace() {
        while pos < input.count {
            switch input[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    /// Parses `"key"` and the `:` after it, leaving `pos` at the member's value.
    private mutating func parseKey(orElse message: String) throws(JSONError) -> String {
        guard pos < input.count else { throw error("unexpected end of input", at: pos) }
        guard input[pos] == UInt8(ascii: "\"") else { throw error(message, at: pos) }
        let key = try parseString()
        skipWhitespace()
        guard pos < input.count else { throw error("unexpected end of input", at: pos) }
        guard input[pos] == UInt8(ascii: ":") else { throw error("expected ':' after object key", at: pos) }
        pos += 1
        skipWhitespace()
        return key
    }

    /// Parses the string whose opening quote is at `pos`.
    private mutating func parseString() throws(JSONError) -> String {
        let opening = pos
        pos += 1
        let start = pos
        // Fast path: no escapes, so the string is the bytes themselves once validated.
        while pos < input.count {
            let byte = input[pos]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
                pos += 1
                return string
            } else if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(opening: opening, start: start)
            } else if byte < 0x20 {
                throw error("unescaped control character \(Self.codePoint(UInt32(byte))) in string", at: pos)
            } else if byte < 0x80 {
                pos += 1
            } else {
                guard let length = utf8SequenceLength(at: pos) else { throw error("invalid UTF-8", at: pos) }
                pos += length
            }
        }
        throw error("unterminated string", at: opening)
    }

    /// Continues a string at its first backslash, copying runs between escapes into `scratch`.
    private mutating func parseEscapedString(opening: Int, start: Int) throws(JSONError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = start
        while pos < input.count {
            let byte = input[pos]
            if byte == UInt8(ascii: "\"") {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<pos]))
                pos += 1
                return String(decoding: scratch, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<pos]))
                try parseEscape(opening: opening)
                runStart = pos
            } else if byte < 0x20 {
                throw error("unescaped control character \(Self.codePoint(UInt32(byte))) in string", at: pos)
            } else if byte < 0x80 {
                pos += 1
            } else {
                guard let length = utf8SequenceLength(at: pos) else { throw error("invalid UTF-8", at: pos) }
                pos += length
            }
        }
        throw error("unterminated string", at: opening)
    }

    /// Decodes the escape whose backslash is at `pos` into `scratch`, leaving `pos` after it.
    private mutating func parseEscape(opening: Int) throws(JSONError) {
        let backslash = pos
        pos += 1
        guard pos < input.count else { throw error("unterminated string", at: opening) }
        let simple: UInt8
        switch input[pos] {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            pos += 1
            var scalar = try hex4(backslash: backslash, opening: opening)
            if scalar >= 0xD800, scalar <= 0xDBFF {
                // A high surrogate is only meaningful followed by an escaped low surrogate.
                guard pos + 1 < input.count, input[pos] == UInt8(ascii: "\\"), input[pos + 1] == UInt8(ascii: "u")
                else { throw error("unpaired surrogate '\\u\(Self.hex(scalar))'", at: backslash) }
                let secondBackslash = pos
                pos += 2
                let low = try hex4(backslash: secondBackslash, opening: opening)
                guard low >= 0xDC00, low <= 0xDFFF else {
                    throw error("unpaired surrogate '\\u\(Self.hex(scalar))'", at: backslash)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00, scalar <= 0xDFFF {
                throw error("unpaired surrogate '\\u\(Self.hex(scalar))'", at: backslash)
            }
            appendUTF8(scalar)
            return
        default:
            let byte = input[pos]
            if byte >= 0x20, byte < 0x7F {
                throw error("invalid escape '\\\(Character(Unicode.Scalar(byte)))'", at: backslash)
            }
            guard let scalar = scalar(at: pos) else { throw error("invalid UTF-8", at: pos) }
            throw error("invalid escape: '\\' followed by \(Self.codePoint(scalar))", at: backslash)
        }
        scratch.append(simple)
        pos += 1
    }

    /// Reads the 4 hex digits of a `\u` escape at `pos`.
    private mutating func hex4(backslash: Int, opening: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard pos < input.count else { throw error("unterminated string", at: opening) }
            let byte = input[pos]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected 4 hex digits after '\\u'", at: backslash)
            }
            value = value << 4 | UInt32(digit)
            pos += 1
        }
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Parses the number starting at `pos`.
    private mutating func parseNumber() throws(JSONError) -> JSON {
        let start = pos
        let negative = input[pos] == UInt8(ascii: "-")
        if negative { pos += 1 }
        // Accumulated negatively so Int64.min fits.
        var accumulator: Int64 = 0
        var fitsInt64 = true
        guard pos < input.count, Self.isDigit(input[pos]) else {
            throw error("expected digit after '-'", at: pos)
        }
        if input[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < input.count, Self.isDigit(input[pos]) {
                throw error("leading zeros are not allowed", at: pos - 1)
            }
        } else {
            while pos < input.count, Self.isDigit(input[pos]) {
                let digit = Int64(input[pos] - UInt8(ascii: "0"))
                if fitsInt64 {
                    let (times10, o1) = accumulator.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times10.subtractingReportingOverflow(digit)
                    if o1 || o2 { fitsInt64 = false } else { accumulator = next }
                }
                pos += 1
            }
        }
        var isInteger = true
        if pos < input.count, input[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < input.count, Self.isDigit(input[pos]) else {
                throw error("expected digit after '.'", at: pos)
            }
            while pos < input.count, Self.isDigit(input[pos]) { pos += 1 }
        }
        if pos < input.count, input[pos] == UInt8(ascii: "e") || input[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < input.count, input[pos] == UInt8(ascii: "+") || input[pos] == UInt8(ascii: "-") {
                pos += 1
            }
            guard pos < input.count, Self.isDigit(input[pos]) else {
                throw error("expected digit in exponent", at: pos)
            }
            while pos < input.count, Self.isDigit(input[pos]) { pos += 1 }
        }
        if isInteger, fitsInt64 {
            if negative { return .int(accumulator) }
            if accumulator != .min { return .int(-accumulator) }
        }
        // The grammar is checked, so the standard library's parser sees only valid input.
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw error("number out of range", at: start) }
        return .double(double)
    }

    /// Parses `true`, `false` or `null`, naming the whole word when it is something else.
    private mutating func parseLiteral() throws(JSONError) -> JSON {
        let start = pos
        while pos < input.count, Self.isWordByte(input[pos]) { pos += 1 }
        let word = UnsafeBufferPointer(rebasing: input[start..<pos])
        if word.elementsEqual("true".utf8) { return .bool(true) }
        if word.elementsEqual("false".utf8) { return .bool(false) }
        if word.elementsEqual("null".utf8) { return .null }
        let shown = String(decoding: word.prefix(32), as: UTF8.self) + (word.count > 32 ? "…" : "")
        throw error("invalid literal '\(shown)'", at: start)
    }

    // MARK: - Bytes

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// The length of the well-formed UTF-8 sequence of 2–4 bytes at `i`, or nil.
    private func utf8SequenceLength(at i: Int) -> Int? {
        let count = input.count
        func continuation(_ j: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            j < count && range.contains(input[j])
        }
        switch input[i] {
        case 0xC2...0xDF:
            return continuation(i + 1) ? 2 : nil
        case 0xE0:
            return continuation(i + 1, 0xA0...0xBF) && continuation(i + 2) ? 3 : nil
        case 0xE1...0xEC, 0xEE...0xEF:
            return continuation(i + 1) && continuation(i + 2) ? 3 : nil
        case 0xED:
            // Excludes the UTF-16 surrogates.
            return continuation(i + 1, 0x80...0x9F) && continuation(i + 2) ? 3 : nil
        case 0xF0:
            return continuation(i + 1, 0x90...0xBF) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
        case 0xF1...0xF3:
            return continuation(i + 1) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
        case 0xF4:
            return continuation(i + 1, 0x80...0x8F) && continuation(i + 2) && continuation(i + 3) ? 4 : nil
        default:
            return nil
        }
    }

    /// The scalar encoded at `i`, or nil if the bytes there are not valid UTF-8.
    private func scalar(at i: Int) -> UInt32? {
        let lead = input[i]
        if lead < 0x80 { return UInt32(lead) }
        guard let length = utf8SequenceLength(at: i) else { return nil }
        var value = UInt32(lead) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for j in 1..<length { value = value << 6 | UInt32(input[i + j] & 0x3F) }
        return value
    }

    // MARK: - Errors

    private func unexpectedCharacter(at offset: Int) -> JSONError {
        let byte = input[offset]
        if byte >= 0x20, byte < 0x7F {
            return error("unexpected character '\(Character(Unicode.Scalar(byte)))'", at: offset)
        }
        guard let scalar = scalar(at: offset) else { return error("invalid UTF-8", at: offset) }
        return error("unexpected character \(Self.codePoint(scalar))", at: offset)
    }

    /// `U+000A`-style name of a code point, for characters that do not print.
    private static func codePoint(_ scalar: UInt32) -> String {
        "U+" + hex(scalar)
    }

    /// Uppercase hex, at least 4 digits.
    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// An error at byte `offset`, with its line and column worked out (only on failure).
    private func error(_ message: String, at offset: Int) -> JSONError {
        let end = min(offset, input.count)
        var line = 1
        var lineStart = 0
        for i in 0..<end where input[i] == 0x0A {
            line += 1
            lineStart = i + 1
        }
        var column = 1
        for i in lineStart..<end where input[i] & 0xC0 != 0x80 { column += 1 }
        return JSONError(offset: offset, line: line, column: column, message: message)
    }
}
