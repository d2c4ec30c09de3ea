/// Standard base64 (RFC 4648 §4, alphabet `A–Z a–z 0–9 + /`), without Foundation.
public enum Base64 {
    /// `bytes` in standard base64 with `=` padding; empty input gives `""`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            // Iterators need not keep returning nil after the end, so stop asking at the first.
            let b1 = iterator.next()
            let b2 = b1 == nil ? nil : iterator.next()
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 {
                out.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
            } else {
                out.append(UInt8(ascii: "="))
            }
            if let b2 {
                out.append(alphabet[Int(b2 & 0x3F)])
            } else {
                out.append(UInt8(ascii: "="))
            }
            if b2 == nil { break }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes encoded by `s`, or nil unless `s` is canonical standard base64: either fully
    /// padded with `=` or not padded at all, no whitespace or other characters, and zero in the
    /// unused bits of the last character (so every byte string has exactly one accepted
    /// padded and one unpadded spelling).
    public static func decode(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        var length = u.count
        var padding = 0
        while length > 0, padding < 2, u[length - 1] == UInt8(ascii: "=") {
            length -= 1
            padding += 1
        }
        let tail = length % 4
        if tail == 1 { return nil }
        if padding > 0, (u.count % 4 != 0 || padding != 4 - tail) { return nil }

        var out: [UInt8] = []
        out.reserveCapacity(length / 4 * 3 + 2)
        var i = 0
        while i + 4 <= length {
            guard let a = sextet(u[i]), let b = sextet(u[i + 1]), let c = sextet(u[i + 2]), let d = sextet(u[i + 3])
            else { return nil }
            out.append(a << 2 | b >> 4)
            out.append(b << 4 | c >> 2)
            out.append(c << 6 | d)
            i += 4
        }
        switch tail {
        case 2:
            guard let a = sextet(u[i]), let b = sextet(u[i + 1]), b & 0x0F == 0 else { return nil }
            out.append(a << 2 | b >> 4)
        case 3:
            guard let a = sextet(u[i]), let b = sextet(u[i + 1]), let c = sextet(u[i + 2]), c & 0x03 == 0
            else { return nil }
            out.append(a << 2 | b >> 4)
            out.append(b << 4 | c >> 2)
        default:
            break
        }
        return out
    }

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
