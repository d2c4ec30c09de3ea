import BatonCore
import Foundation
import Testing

/// Lines through a player's readings: a player whose position moves in steps is lined up at
/// its steps, not read off its latest (lagging) reading.
@Suite("Position lines")
struct PositionLineTests {
    let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)

    /// Readings every `every` seconds for `span` of a player at `start` + t that says its
    /// position only at steps `step` apart (the first at `phase`).
    func stepped(start: Double, step: Double, phase: Double = 0, every: Double, span: Double) -> [(position: Double, at: Date)] {
        stride(from: 0.0, through: span, by: every).map { t in
            let steps = ((t - phase) / step).rounded(.down)
            return (start + phase + steps * step, origin.addingTimeInterval(t))
        }
    }

    @Test("a player stepping every 80 ms, read every 3 ms: the line is within 2 ms of where it is, where its last reading lags up to a step")
    func steppedPlayer() throws {
        for phase in [0.0, 0.013, 0.041, 0.079] {
            let readings = stepped(start: 10, step: 0.08, phase: phase, every: 0.003, span: 0.3)
            let line = try #require(PositionLine(readings: readings, rate: 1, paused: false))
            let end = origin.addingTimeInterval(0.3)
            #expect(abs(line.position(at: end) - 10.3) <= 0.002, "phase \(phase): \(line.position(at: end))")
            #expect(line.steps >= 3)
            #expect(line.rate == 1)
        }
        // The lag the line removes: the last reading alone.
        let last = try #require(stepped(start: 10, step: 0.08, phase: 0.079, every: 0.003, span: 0.3).last)
        #expect(10.3 - last.position > 0.05)
    }

    @Test("a fine-grained player (a new position at every reading): the line through them all")
    func fineGrained() throws {
        let readings = stride(from: 0.0, through: 0.1, by: 0.002).map { (12.5 + $0, origin.addingTimeInterval($0)) }
        let line = try #require(PositionLine(readings: readings, rate: 1, paused: false))
        #expect(abs(line.position(at: origin.addingTimeInterval(1)) - 13.5) < 1e-6)
        #expect(line.steps == readings.count - 1)
    }

    @Test("a paused player is its last reading, holding still; no readings is no line")
    func pausedAndEmpty() throws {
        let line = try #require(PositionLine(readings: [(4.0, origin), (4.0, origin.addingTimeInterval(0.1))], rate: 1, paused: true))
        #expect(line.rate == 0)
        #expect(line.position(at: origin.addingTimeInterval(10)) == 4)
        #expect(PositionLine(readings: [], rate: 1, paused: false) == nil)
    }

    @Test("no step seen in the readings: at least where the first said, advanced since (its step came before it)")
    func noStepSeen() throws {
        let readings = [(7.0, origin), (7.0, origin.addingTimeInterval(0.01)), (7.0, origin.addingTimeInterval(0.02))]
        let line = try #require(PositionLine(readings: readings, rate: 1, paused: false))
        #expect(line.steps == 0)
        #expect(abs(line.position(at: origin.addingTimeInterval(0.02)) - 7.02) < 1e-6)
        #expect(abs(line.position(at: origin.addingTimeInterval(1.02)) - 8.02) < 1e-6)
    }

    @Test("a line moved to another clock gives the same positions at the moved dates")
    func shifted() throws {
        let line = PositionLine(position: 3, at: origin, rate: 1)
        let moved = line.shifted(by: -0.25)
        #expect(abs(moved.position(at: origin.addingTimeInterval(-0.25)) - 3) < 1e-9)
    }
}
