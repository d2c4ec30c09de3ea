import BatonCore
import BatonLua
import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Inputs `scripts/fuzz lua` found, kept so that what they showed stays fixed.
@Suite("Lua fuzzing regressions")
struct LuaFuzzRegressionTests {
    /// A message's date 9394824371.311168 s after 1970 (in 2267), as the wire has it in
    /// microseconds. Into Lua and back it comes out a microsecond off: the date userdata keeps
    /// seconds since 1970 in a Double, whose step there is 2^-19 s (1.9 µs), where the wire
    /// (WireDate) counts from 2001 and rounds in integers. Dates after 2106 (2^32 s) can lose a
    /// microsecond this way.
    @Test("a far date goes into Lua and back to the microsecond")
    func farDateKeepsItsMicroseconds() async throws {
        let microseconds: Int64 = 9_394_824_371_311_168
        let date = Date(timeIntervalSinceReferenceDate: Double(microseconds - 978_307_200 * 1_000_000) / 1_000_000)
        let (outcome, record) = try await runScript("capture(provide(1))", provided: [.date(date)])
        #expect(outcome == .completed)
        guard case .date(let back)? = record.values.first else {
            Issue.record("captured \(record.values)")
            return
        }
        #expect(back == date)
    }
}
