import BatonCore
import Testing

private let K = 1 << 10
private let M = 1 << 20
private let G = 1 << 30
private let T = 1 << 40

@Suite("Byte size text")
struct ByteSizeTextTests {
    static let parseCases: [(String, Int)] = [
        ("64M", 64 * M), ("64MB", 64 * M), ("64MiB", 64 * M), ("64m", 64 * M), ("64mib", 64 * M),
        ("64Mb", 64 * M), ("512K", 512 * K), ("512kb", 512 * K), ("512KiB", 512 * K), ("1G", 1 * G),
        ("1gb", 1 * G), ("3GiB", 3 * G), ("2T", 2 * T), ("1tib", 1 * T), ("1024", 1024), ("1024B", 1024),
        ("1024b", 1024), ("0", 0), ("0K", 0), ("007K", 7 * K),
        ("9223372036854775807", Int.max), ("8388607T", 8_388_607 * T),
    ]

    @Test(arguments: parseCases)
    func parses(_ text: String, _ expected: Int) {
        #expect(ByteSizeText.parse(text) == expected)
    }

    @Test(arguments: [
        "", "-1", "-1K", "+1", "1.5G", "64 M", " 64M", "64M ", "M", "MB", "64X", "64MBB", "64iB", "64Mi", "64KM",
        "1e6", "0x10", "1_024", "9223372036854775808", "8388608T", "9007199254740992K", "８M",
    ])
    func rejects(_ text: String) {
        #expect(ByteSizeText.parse(text) == nil)
    }

    static let formatCases: [(Int, String)] = [
        (64 * M, "64M"), (512 * K, "512K"), (1 * G, "1G"), (1000, "1000"), (0, "0"), (1, "1"), (1024, "1K"),
        (1536, "1536"), (1025, "1025"), (3 * G, "3G"), (1 * T, "1T"), (1536 * M, "1536M"), (Int.max, "9223372036854775807"),
    ]

    @Test(arguments: formatCases)
    func formats(_ n: Int, _ text: String) {
        #expect(ByteSizeText.format(n) == text)
    }

    @Test(arguments: [0, 1, 1000, K, 64 * M, 1536 * M, T, 5 * 1024 * T, Int.max])
    func formatReadsBack(_ n: Int) {
        #expect(ByteSizeText.parse(ByteSizeText.format(n)) == n)
    }
}
