import BatonCore
import Testing

@Suite("Duration text")
struct DurationTextTests {
    static let parseCases: [(String, Duration)] = [
        ("500ms", .milliseconds(500)), ("30s", .seconds(30)), ("2m", .seconds(120)), ("1h", .seconds(3600)),
        ("1.5s", .milliseconds(1500)), ("250us", .microseconds(250)), ("250µs", .microseconds(250)),
        ("10ns", .nanoseconds(10)), ("2", .seconds(2)), ("0.5", .milliseconds(500)), ("0", .zero), ("0s", .zero),
        ("1.5h", .seconds(5400)), ("0.25m", .seconds(15)), ("0.001s", .milliseconds(1)), ("1.5ms", .microseconds(1500)),
        ("007s", .seconds(7)),
        ("1.000000000001s", Duration(secondsComponent: 1, attosecondsComponent: 1_000_000)),
        // Digits past the 12th after the point are ignored.
        ("1.0000000000009s", .seconds(1)),
        ("999999999999999s", .seconds(999_999_999_999_999)),
        ("0.333333333333h", Duration(secondsComponent: 1199, attosecondsComponent: 999_999_998_800_000_000)),
    ]

    @Test(arguments: parseCases)
    func parses(_ text: String, _ expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: [
        "", "-1s", "-0", "+1s", "1 s", " 1s", "1s ", "abc", "s", "ms", "1x", "1sec", "1S", "1MS", "1H", "nan", "NaN",
        "inf", "infinity", "1.", ".5", "1..5", "1.5.5s", "1e3", "1e3s", "1,5s", "1_000s", "0x10s", "1d", "1mss",
        "1000000000000000s", "１s",
    ])
    func rejects(_ text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    static let formatCases: [(Duration, String)] = [
        (.seconds(30), "30s"), (.seconds(120), "2m"), (.milliseconds(500), "500ms"),
        (.milliseconds(1500), "1500ms"), (.seconds(3600), "1h"), (.seconds(90), "90s"), (.zero, "0s"),
        (.microseconds(250), "250us"), (.nanoseconds(1), "1ns"), (.seconds(7260), "121m"), (.seconds(86400), "24h"),
        (.seconds(5400), "90m"), (.seconds(1), "1s"), (.seconds(61), "61s"), (.microseconds(1_000_001), "1000001us"),
        (.nanoseconds(1_000_000_001), "1000000001ns"), (.milliseconds(-1500), "-1500ms"), (.seconds(-60), "-1m"),
        // Below a nanosecond is rounded.
        (Duration(secondsComponent: 0, attosecondsComponent: 5_000_000_400), "5ns"),
        (Duration(secondsComponent: 0, attosecondsComponent: 999_999_999_600_000_000), "1s"),
        // Too many nanoseconds for Int64, written as exact decimal seconds instead.
        (.seconds(10_000_000_000) + .nanoseconds(1), "10000000000.000000001s"),
        (.seconds(10_000_000_000) + .milliseconds(500), "10000000000500ms"),
    ]

    @Test(arguments: formatCases)
    func formats(_ duration: Duration, _ text: String) {
        #expect(DurationText.format(duration) == text)
    }

    @Test func timeoutMessageReadsNaturally() {
        #expect("timeout after \(DurationText.format(.seconds(30)))" == "timeout after 30s")
    }

    static let readBackCases: [Duration] = [
        .seconds(30), .seconds(120), .milliseconds(500), .milliseconds(1500), .seconds(3600), .seconds(90),
        .zero, .microseconds(7), .nanoseconds(123_456_789), .seconds(10_000_000_000) + .nanoseconds(1),
        .seconds(999_999_999_999_999),
    ]

    @Test(arguments: readBackCases)
    func formatReadsBack(_ duration: Duration) {
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }
}
