import BatonCore
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

private func unix(_ seconds: Double) -> Date { Date(timeIntervalSince1970: seconds) }

@Suite("ISO 8601")
struct ISO8601Tests {
    @Test func parsesUTC() {
        #expect(ISO8601.parse("1970-01-01T00:00:00Z") == unix(0))
        #expect(ISO8601.parse("2026-11-21T10:00:00Z") == unix(1_795_255_200))
        #expect(ISO8601.parse("2000-03-01T00:00:00Z") == unix(11017 * 86400))
        #expect(ISO8601.parse("0001-01-01T00:00:00Z") == unix(-62_135_596_800))
        #expect(ISO8601.parse("9999-12-31T23:59:59Z") == unix(253_402_300_799))
        #expect(ISO8601.parse("1900-03-01T00:00:00Z") == unix(-2_203_891_200))
    }

    @Test func acceptedSeparators() {
        let expected = unix(1_795_255_200)
        #expect(ISO8601.parse("2026-11-21t10:00:00z") == expected)
        #expect(ISO8601.parse("2026-11-21 10:00:00Z") == expected)
        #expect(ISO8601.parse("2026-11-21T10:00:00+00:00") == expected)
        #expect(ISO8601.parse("2026-11-21T10:00:00-00:00") == expected)
        #expect(ISO8601.parse("2026-11-21T10:00:00+0000") == expected)
    }

    @Test func offsetsAreConvertedToUTC() {
        let expected = unix(1_795_255_200)
        #expect(ISO8601.parse("2026-11-21T12:30:00+02:30") == expected)
        #expect(ISO8601.parse("2026-11-21T05:00:00-0500") == expected)
        #expect(ISO8601.parse("2026-11-20T22:01:00-11:59") == expected)
        #expect(ISO8601.parse("2026-11-22T09:59:00+23:59") == expected)
        // Crossing a year boundary backwards.
        #expect(ISO8601.parse("1970-01-01T01:00:00+01:00") == unix(0))
        #expect(ISO8601.parse("1969-12-31T23:00:00-01:00") == unix(0))
    }

    @Test func fractions() throws {
        #expect(ISO8601.parse("2026-11-21T10:00:00.250Z") == unix(1_795_255_200.25))
        #expect(ISO8601.parse("2026-11-21T10:00:00.5Z") == unix(1_795_255_200.5))
        // Near Date's own epoch, where a Double resolves far below a microsecond:
        // digits past microseconds are dropped, not rounded.
        let micro = try #require(ISO8601.parse("2001-01-01T00:00:00.123456789Z"))
        #expect(abs(micro.timeIntervalSinceReferenceDate - 0.123456) < 1e-12)
        let long = try #require(ISO8601.parse("2001-01-01T00:00:01.000001999999999999Z"))
        #expect(abs(long.timeIntervalSinceReferenceDate - 1.000001) < 1e-12)
        #expect(ISO8601.parse("1970-01-01T00:00:00.000Z") == unix(0))
    }

    @Test func justBeforeTheEpoch() throws {
        let date = try #require(ISO8601.parse("1969-12-31T23:59:59.999Z"))
        #expect(abs(date.timeIntervalSince1970 - -0.001) < 1e-6)
        #expect(ISO8601.format(date) == "1969-12-31T23:59:59.999Z")
        #expect(ISO8601.format(unix(-0.001)) == "1969-12-31T23:59:59.999Z")
        #expect(ISO8601.format(unix(-1)) == "1969-12-31T23:59:59Z")
        #expect(ISO8601.format(unix(-86400 * 365)) == "1969-01-01T00:00:00Z")
    }

    @Test func leapYears() {
        #expect(ISO8601.parse("2000-02-29T00:00:00Z") == unix(951_782_400))
        #expect(ISO8601.parse("2024-02-29T12:00:00Z") != nil)
        #expect(ISO8601.parse("1600-02-29T00:00:00Z") != nil)
        #expect(ISO8601.parse("0004-02-29T00:00:00Z") != nil)
        #expect(ISO8601.parse("1900-02-29T00:00:00Z") == nil)
        #expect(ISO8601.parse("2023-02-29T00:00:00Z") == nil)
        #expect(ISO8601.parse("2100-02-29T00:00:00Z") == nil)
        #expect(ISO8601.parse("2000-02-30T00:00:00Z") == nil)
        #expect(ISO8601.format(unix(951_782_400)) == "2000-02-29T00:00:00Z")
        #expect(ISO8601.format(unix(951_782_400 + 86400)) == "2000-03-01T00:00:00Z")
    }

    @Test(arguments: [
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-06-31T00:00:00Z", "2026-09-31T00:00:00Z", "2026-11-31T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T10:60:00Z", "2026-11-21T10:00:60Z", "0000-01-01T00:00:00Z",
        "2026-11-21T10:00:00+24:00", "2026-11-21T10:00:00+01:60", "2026-11-21T10:00:00",
        "2026-11-21T10:00:00.Z", "2026-11-21T10:00:00,5Z", "2026-11-21T10:00:00+01", "2026-11-21T10:00:00+1:00",
        "2026-11-21T10:00:00+01:0", "2026-11-21T10:00:00+01:00:00", "2026-11-21T10:00:00Zjunk",
        "2026-11-21T10:00:00ZZ", " 2026-11-21T10:00:00Z", "2026-11-21T10:00:00Z ", "2026-11-21", "26-11-21T10:00:00Z",
        "2026-1-21T10:00:00Z", "2026-11-21T1:00:00Z", "2026-11-21X10:00:00Z", "2026/11/21T10:00:00Z",
        "2026-11-21T10:00Z", "+2026-11-21T10:00:00Z", "2026-11-21T10:00:00UTC", "", "2026-11-21T10:00:0aZ",
        "２026-11-21T10:00:00Z", "2026-11-21T10:00:00.５Z",
    ])
    func rejects(_ text: String) {
        #expect(ISO8601.parse(text) == nil)
    }

    @Test func format() {
        #expect(ISO8601.format(unix(0)) == "1970-01-01T00:00:00Z")
        #expect(ISO8601.format(unix(1_795_255_200)) == "2026-11-21T10:00:00Z")
        #expect(ISO8601.format(unix(1_795_255_200.25)) == "2026-11-21T10:00:00.250Z")
        #expect(ISO8601.format(unix(1_795_255_200.001)) == "2026-11-21T10:00:00.001Z")
        #expect(ISO8601.format(unix(1_795_255_200.999)) == "2026-11-21T10:00:00.999Z")
        // Rounded to the nearest millisecond.
        #expect(ISO8601.format(unix(1_795_255_200.0004)) == "2026-11-21T10:00:00Z")
        #expect(ISO8601.format(unix(1_795_255_200.0006)) == "2026-11-21T10:00:00.001Z")
        #expect(ISO8601.format(unix(1_795_255_199.9996)) == "2026-11-21T10:00:00Z")
        #expect(ISO8601.format(unix(-62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(ISO8601.format(unix(253_402_300_799.5)) == "9999-12-31T23:59:59.500Z")
        // Foundation's distantPast is 0001-01-01 in the Julian calendar; proleptic Gregorian
        // (ISO 8601's calendar) puts it two days earlier.
        #expect(ISO8601.format(Date.distantPast) == "0000-12-30T00:00:00Z")
        #expect(ISO8601.format(Date.distantFuture) == "4001-01-01T00:00:00Z")
        #expect(ISO8601.format(Date(timeIntervalSinceReferenceDate: 0)) == "2001-01-01T00:00:00Z")
    }

    @Test func yearsOutsideTheParsableRangeUseTheExpandedForm() {
        #expect(ISO8601.format(unix(253_402_300_800)) == "+10000-01-01T00:00:00Z")
        #expect(ISO8601.format(unix(-62_135_596_801)) == "0000-12-31T23:59:59Z")
        #expect(ISO8601.format(unix(-62_135_596_800 - 366 * 86400 - 1)) == "-0001-12-31T23:59:59Z")
        #expect(ISO8601.parse("+10000-01-01T00:00:00Z") == nil)
    }

    @Test func everyMonthBoundaryFrom0001To9999() {
        func pad(_ n: Int, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: width - digits.count) + digits
        }
        func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }
        let monthLengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        // 0000-12-31, the day before the first accepted date.
        var previousLastDay = unix(-62_135_596_800 - 86400)
        years: for year in 1...9999 {
            for month in 1...12 {
                let length = monthLengths[month - 1] + (month == 2 && isLeap(year) ? 1 : 0)
                let prefix = "\(pad(year, 4))-\(pad(month, 2))-"
                let firstText = prefix + "01T00:00:00Z"
                let lastText = prefix + pad(length, 2) + "T00:00:00Z"
                guard let first = ISO8601.parse(firstText), let last = ISO8601.parse(lastText),
                    first.timeIntervalSince(previousLastDay) == 86400,
                    last.timeIntervalSince(first) == Double(length - 1) * 86400,
                    ISO8601.parse(prefix + pad(length + 1, 2) + "T00:00:00Z") == nil,
                    ISO8601.format(first) == firstText, ISO8601.format(last) == lastText
                else {
                    Issue.record("wrong around \(firstText)")
                    break years
                }
                previousLastDay = last
            }
        }
        #expect(ISO8601.format(previousLastDay) == "9999-12-31T00:00:00Z")
    }

    @Test func roundTripsAcrossTheWholeRange() throws {
        // Every 10,007,000.123 seconds (about 116 days) from year 1 to 9999, plus the fraction.
        var seconds = -62_135_596_800.0
        var checked = 0
        while seconds < 253_402_300_799 {
            let text = ISO8601.format(unix(seconds))
            let parsed = try #require(ISO8601.parse(text), "\(text)")
            #expect(ISO8601.format(parsed) == text)
            #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.001)
            seconds += 10_007_000.123
            checked += 1
        }
        #expect(checked > 30_000)
    }
}
