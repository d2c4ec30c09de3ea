/// Reads and writes durations as users type them in scripts and on the command line.
public enum DurationText {
    /// Parses a non-negative decimal number followed by a unit: `h`, `m`, `s`, `ms`, `us`
    /// (or `µs`), `ns`, or no unit for seconds. Examples: `500ms`, `30s`, `2m`, `1h`, `1.5s`,
    /// `250us`, `2`, `0.5`.
    ///
    /// Returns nil for anything else: empty text, a sign, whitespace, a missing digit around
    /// `.`, an unknown unit, `nan`/`inf`, or more than 15 digits before the point. Digits past
    /// the 12th after the point are ignored.
    public static func parse(_ s: String) -> Duration? {
        let u = Array(s.utf8)
        var i = 0
        var whole: Int64 = 0
        while i < u.count, u[i] &- UInt8(ascii: "0") < 10 {
            // A bound that keeps every product below well within Duration's range.
            guard i < 15 else { return nil }
            whole = whole * 10 + Int64(u[i] - UInt8(ascii: "0"))
            i += 1
        }
        guard i > 0 else { return nil }
        var fraction: Int64 = 0
        var fractionScale: Int64 = 1
        if i < u.count, u[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < u.count, u[i] &- UInt8(ascii: "0") < 10 {
                if i - start < 12 {
                    fraction = fraction * 10 + Int64(u[i] - UInt8(ascii: "0"))
                    fractionScale *= 10
                }
                i += 1
            }
            guard i > start else { return nil }
        }
        let unit: Duration
        switch String(decoding: u[i...], as: UTF8.self) {
        case "", "s": unit = .seconds(1)
        case "h": unit = .seconds(3600)
        case "m": unit = .seconds(60)
        case "ms": unit = .milliseconds(1)
        case "us", "µs": unit = .microseconds(1)
        case "ns": unit = .nanoseconds(1)
        default: return nil
        }
        return unit * whole + unit * fraction / fractionScale
    }

    /// `d` as a whole number of the largest unit among `h`, `m`, `s`, `ms`, `us`, `ns` that
    /// holds it exactly: 30s → `30s`, 120s → `2m`, 90s → `90s`, 0.5s → `500ms`,
    /// 1.5s → `1500ms`, 3600s → `1h`, zero → `0s`. Negative durations get a leading `-`.
    /// Sub-nanosecond parts are rounded to the nearest nanosecond. ``parse(_:)`` reads every
    /// non-negative result back to the same duration.
    public static func format(_ d: Duration) -> String {
        if d < .zero { return "-" + format(.zero - d) }
        let (wholeSeconds, attoseconds) = d.components
        var seconds = wholeSeconds
        var nanoseconds = (attoseconds + 500_000_000) / 1_000_000_000
        if nanoseconds == 1_000_000_000 {
            seconds += 1
            nanoseconds = 0
        }
        if nanoseconds == 0 {
            if seconds == 0 { return "0s" }
            if seconds % 3600 == 0 { return "\(seconds / 3600)h" }
            if seconds % 60 == 0 { return "\(seconds / 60)m" }
            return "\(seconds)s"
        }
        let (unitsPerSecond, nanosecondsPerUnit, suffix): (Int64, Int64, String) =
            nanoseconds % 1_000_000 == 0 ? (1000, 1_000_000, "ms")
            : nanoseconds % 1000 == 0 ? (1_000_000, 1000, "us")
            : (1_000_000_000, 1, "ns")
        let (scaled, overflow1) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        let (count, overflow2) = scaled.addingReportingOverflow(nanoseconds / nanosecondsPerUnit)
        if !overflow1, !overflow2 { return "\(count)\(suffix)" }
        // Centuries with a sub-second part: decimal seconds are still exact and parseable.
        var fraction = String(nanoseconds)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(seconds).\(fraction)s"
    }
}
