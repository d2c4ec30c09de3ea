/// Reads and writes byte counts such as memory limits, in binary multiples (K = 1024).
public enum ByteSizeText {
    /// Parses a non-negative whole number with an optional, case-insensitive suffix:
    /// none or `B` for bytes; `K`, `KB`, `KiB` for 1024; `M`, `MB`, `MiB` for 1024²;
    /// `G`, `GB`, `GiB` for 1024³; `T`, `TB`, `TiB` for 1024⁴. Examples: `64M`, `64MB`,
    /// `64MiB`, `512K`, `1G`, `1024`.
    ///
    /// Returns nil for anything else: empty text, signs, fractions, whitespace, unknown
    /// suffixes, or a result that does not fit `Int`.
    public static func parse(_ s: String) -> Int? {
        let u = Array(s.utf8)
        var i = 0
        var count = 0
        while i < u.count, u[i] &- UInt8(ascii: "0") < 10 {
            let (times10, o1) = count.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.addingReportingOverflow(Int(u[i] - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            count = next
            i += 1
        }
        guard i > 0 else { return nil }
        let shift: Int
        switch String(decoding: u[i...], as: UTF8.self).lowercased() {
        case "", "b": shift = 0
        case "k", "kb", "kib": shift = 10
        case "m", "mb", "mib": shift = 20
        case "g", "gb", "gib": shift = 30
        case "t", "tb", "tib": shift = 40
        default: return nil
        }
        let (bytes, overflow) = count.multipliedReportingOverflow(by: 1 << shift)
        return overflow ? nil : bytes
    }

    /// `n` with the largest of `T`, `G`, `M`, `K` that divides it exactly (`64M`, `512K`,
    /// `1G`), else plain digits (`1000`, `0`). ``parse(_:)`` reads every non-negative result back.
    public static func format(_ n: Int) -> String {
        guard n > 0 else { return String(n) }
        for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] where n % (1 << shift) == 0 {
            return "\(n >> shift)\(suffix)"
        }
        return String(n)
    }
}
