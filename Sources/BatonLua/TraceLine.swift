import BatonCore

/// One trace record as it is written: JSON straight into bytes, a field at a time. Several
/// records are written for every call a traced batch makes, so nothing here builds a ``JSON``
/// value or a `String` on the way, except ``field(_:_:)-(_,JSON)`` for a message body.
public struct TraceLine {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(512) }

    mutating func raw(_ text: StaticString) {
        // Keys and kinds are ASCII literals.
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func key(_ key: StaticString) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        raw(key)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// `,"key":"value"`, escaped as JSON strings are.
    public mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }

    /// `,"key":"value"` for a value known to need no escaping (a record's kind).
    mutating func field(_ key: StaticString, _ value: StaticString) {
        self.key(key)
        bytes.append(UInt8(ascii: "\""))
        raw(value)
        bytes.append(UInt8(ascii: "\""))
    }

    /// `,"key":n`.
    public mutating func field(_ key: StaticString, _ value: Int) {
        self.key(key)
        integer(value)
    }

    /// `,"key":x`, a number of seconds to the nanosecond (or a count), finite.
    public mutating func field(_ key: StaticString, _ value: Double) {
        self.key(key)
        decimal(value)
    }

    /// `,"key":s.uuuuuu`: a wall-clock time in Unix seconds, to the microsecond.
    mutating func field(_ key: StaticString, seconds: Int, microseconds: Int) {
        self.key(key)
        integer(seconds)
        bytes.append(UInt8(ascii: "."))
        var divisor = 100_000
        var rest = microseconds
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// `,"key":true|false`.
    public mutating func field(_ key: StaticString, _ value: Bool) {
        self.key(key)
        raw(value ? "true" : "false")
    }

    /// `,"key":` and a JSON document (a message body, a traceback's frames).
    public mutating func field(_ key: StaticString, _ value: JSON) {
        self.key(key)
        bytes.append(contentsOf: value.serialized().utf8)
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0..<0x20:
                raw("\\u00")
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 15)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    mutating func integer(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[i]) }
        }
    }

    /// Whole units, then nine decimals (trailing zeros dropped): exact for nanoseconds.
    mutating func decimal(_ value: Double) {
        guard value.isFinite else { raw("null"); return }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        guard magnitude < 9e9 else {
            bytes.append(contentsOf: "\(magnitude)".utf8)
            return
        }
        let whole = magnitude.rounded(.down)
        var fraction = Int(((magnitude - whole) * 1e9).rounded())
        var units = Int(whole)
        if fraction >= 1_000_000_000 { units += 1; fraction -= 1_000_000_000 }
        integer(units)
        guard fraction > 0 else { return }
        bytes.append(UInt8(ascii: "."))
        var divisor = 100_000_000
        while fraction > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(fraction / divisor))
            fraction %= divisor
            divisor /= 10
        }
    }
}
