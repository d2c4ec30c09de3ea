import BatonCore

/// Trace records as they are written: JSON straight into one buffer, a field at a time, the
/// lines of many records together until the trace flushes them. Several records are written
/// for every call a traced batch makes, so nothing here allocates per record, except
/// ``field(_:_:)-(_,JSON)`` for a message body or a traceback.
public struct TraceLine {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    /// Frees the buffer; the line must not be used after.
    func deallocate() { base.deallocate() }

    /// The bytes written, for writing out.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        body(UnsafeRawBufferPointer(start: base, count: count))
    }

    mutating func removeAll() { count = 0 }

    private mutating func reserve(_ more: Int) {
        guard count + more > capacity else { return }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: max(capacity * 2, count + more))
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = max(capacity * 2, count + more)
    }

    @inline(__always) private mutating func put(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    mutating func raw(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if bytes.count > 0 { (base + count).update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
        count += bytes.count
    }

    /// Keys and kinds: ASCII literals.
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { raw(UnsafeRawBufferPointer($0)) }
    }

    private mutating func key(_ key: StaticString) {
        reserve(key.utf8CodeUnitCount + 4)
        put(UInt8(ascii: ","))
        put(UInt8(ascii: "\""))
        raw(key)
        put(UInt8(ascii: "\""))
        put(UInt8(ascii: ":"))
    }

    /// `,"key":"value"`, escaped as JSON strings are.
    public mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }

    /// `,"key":"value"` from a string's UTF-8 bytes (a Lua string on its stack).
    mutating func field(_ key: StaticString, utf8 value: UnsafeRawBufferPointer) {
        self.key(key)
        string(utf8: value)
    }

    /// `,"key":"value"` for a value known to need no escaping (a record's kind).
    mutating func field(_ key: StaticString, _ value: StaticString) {
        self.key(key)
        reserve(value.utf8CodeUnitCount + 2)
        put(UInt8(ascii: "\""))
        raw(value)
        put(UInt8(ascii: "\""))
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
        reserve(7)
        put(UInt8(ascii: "."))
        var divisor = 100_000
        var rest = microseconds
        while divisor > 0 {
            put(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
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
        var text = value.serialized()
        text.withUTF8 { raw(UnsafeRawBufferPointer($0)) }
    }

    /// A JSON string: copied at once when nothing in it needs escaping, as is usual.
    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
    }

    mutating func string(utf8: UnsafeRawBufferPointer) {
        reserve(utf8.count + 2)
        put(UInt8(ascii: "\""))
        if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            raw(utf8)
        } else {
            for byte in utf8 { escaped(byte) }
        }
        reserve(1)
        put(UInt8(ascii: "\""))
    }

    private mutating func escaped(_ byte: UInt8) {
        reserve(6)
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): put(UInt8(ascii: "\\")); put(byte)
        case UInt8(ascii: "\n"): put(UInt8(ascii: "\\")); put(UInt8(ascii: "n"))
        case UInt8(ascii: "\t"): put(UInt8(ascii: "\\")); put(UInt8(ascii: "t"))
        case UInt8(ascii: "\r"): put(UInt8(ascii: "\\")); put(UInt8(ascii: "r"))
        case 0..<0x20:
            raw("\\u00")
            put(Self.hexDigit(byte >> 4))
            put(Self.hexDigit(byte & 15))
        default: put(byte)
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    mutating func integer(_ value: Int) {
        reserve(21)
        if value < 0 { put(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // Digits from the right, into the room reserved, then turned round.
        let start = count
        repeat {
            put(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        var (i, j) = (start, count - 1)
        while i < j {
            (base[i], base[j]) = (base[j], base[i])
            i += 1
            j -= 1
        }
    }

    /// Whole units, then up to nine decimals (trailing zeros dropped): exact for nanoseconds.
    mutating func decimal(_ value: Double) {
        guard value.isFinite else { raw("null"); return }
        reserve(1)
        if value < 0 { put(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        guard magnitude < 9e9 else {
            var text = "\(magnitude)"
            text.withUTF8 { raw(UnsafeRawBufferPointer($0)) }
            return
        }
        let whole = magnitude.rounded(.down)
        var fraction = Int(((magnitude - whole) * 1e9).rounded())
        var units = Int(whole)
        if fraction >= 1_000_000_000 { units += 1; fraction -= 1_000_000_000 }
        integer(units)
        guard fraction > 0 else { return }
        reserve(10)
        put(UInt8(ascii: "."))
        var divisor = 100_000_000
        while fraction > 0 {
            put(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction / divisor))
            fraction %= divisor
            divisor /= 10
        }
    }
}
