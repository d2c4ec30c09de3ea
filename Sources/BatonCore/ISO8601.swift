#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads and writes ISO 8601 / RFC 3339 timestamps without Foundation's formatters.
public enum ISO8601 {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`.
    ///
    /// `t`, `z` and a space are accepted for `T` and `Z`. The zone is required and the result
    /// is converted to UTC. Fields must be in range (years 0001–9999, real days of the month
    /// with Gregorian leap years, hours 00–23, minutes and seconds 00–59, offsets up to
    /// 23:59). The fraction may have any number of digits; digits past microseconds are ignored.
    /// Returns nil for anything else.
    public static func parse(_ s: String) -> Date? {
        var s = s
        return s.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes u: UnsafeBufferPointer<UInt8>) -> Date? {
        let n = u.count
        func number(_ start: Int, _ length: Int) -> Int64? {
            guard start + length <= n else { return nil }
            var value: Int64 = 0
            for i in start..<start + length {
                let digit = u[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        func byte(_ i: Int) -> UInt8 { i < n ? u[i] : 0 }

        guard let year = number(0, 4), byte(4) == UInt8(ascii: "-"),
            let month = number(5, 2), byte(7) == UInt8(ascii: "-"),
            let day = number(8, 2),
            byte(10) == UInt8(ascii: "T") || byte(10) == UInt8(ascii: "t") || byte(10) == UInt8(ascii: " "),
            let hour = number(11, 2), byte(13) == UInt8(ascii: ":"),
            let minute = number(14, 2), byte(16) == UInt8(ascii: ":"),
            let second = number(17, 2)
        else { return nil }
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...CivilDate.daysInMonth(year: year, month: month)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }

        var i = 19
        var microseconds: Int64 = 0
        if byte(i) == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < n, u[i] &- UInt8(ascii: "0") < 10 {
                if i - start < 6 { microseconds = microseconds * 10 + Int64(u[i] - UInt8(ascii: "0")) }
                i += 1
            }
            guard i > start else { return nil }
            for _ in min(i - start, 6)..<6 { microseconds *= 10 }
        }

        var offsetSeconds: Int64 = 0
        switch byte(i) {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = byte(i) == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number(i + 1, 2) else { return nil }
            i += 3
            if byte(i) == UInt8(ascii: ":") { i += 1 }
            guard let minutes = number(i, 2), hours < 24, minutes < 60 else { return nil }
            i += 2
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        guard i == n else { return nil }

        let days = CivilDate(year: year, month: month, day: day).daysSinceEpoch
        let unixSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        // Whole seconds and the fraction are added separately so the whole part stays exact.
        return Date(
            timeIntervalSinceReferenceDate: Double(unixSeconds - secondsFrom1970To2001)
                + Double(microseconds) / 1_000_000)
    }

    /// Formats `date` in UTC as `2026-11-21T10:00:00Z`, adding `.mmm` milliseconds only when
    /// they are not zero (`2026-11-21T10:00:00.250Z`). The time is rounded to the nearest
    /// millisecond. Years outside 0001–9999 (which ``parse(_:)`` rejects) are written in the
    /// expanded form `+10000` / `-0001`; dates beyond about ±9 million years are clamped.
    ///
    /// With `alwaysMilliseconds` the `.mmm` part is written even when zero, so that lines of
    /// a log line up.
    public static func format(_ date: Date, alwaysMilliseconds: Bool = false) -> String {
        // Counted from 2001, the Date's own epoch, so no precision is lost converting to 1970.
        var milliseconds = (date.timeIntervalSinceReferenceDate * 1000).rounded()
        if milliseconds.isNaN { milliseconds = 0 }
        milliseconds = min(max(milliseconds, -3e17), 3e17)
        let unixMilliseconds = Int64(milliseconds) + secondsFrom1970To2001 * 1000
        let unixSeconds = floorDivide(unixMilliseconds, 1000)
        let millisecond = unixMilliseconds - unixSeconds * 1000
        let days = floorDivide(unixSeconds, 86_400)
        let secondOfDay = unixSeconds - days * 86_400
        let civil = CivilDate(daysSinceEpoch: days)

        var out: [UInt8] = []
        out.reserveCapacity(24)
        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        if (0...9999).contains(civil.year) {
            digits(civil.year, 4)
        } else {
            out.append(civil.year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            let magnitude = abs(civil.year)
            digits(magnitude, max(4, String(magnitude).utf8.count))
        }
        out.append(UInt8(ascii: "-"))
        digits(civil.month, 2)
        out.append(UInt8(ascii: "-"))
        digits(civil.day, 2)
        out.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        if millisecond != 0 || alwaysMilliseconds {
            out.append(UInt8(ascii: "."))
            digits(millisecond, 3)
        }
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `Date`'s reference date, 2001-01-01T00:00:00Z, in Unix seconds.
    private static let secondsFrom1970To2001: Int64 = 978_307_200

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}
