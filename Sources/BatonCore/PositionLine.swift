#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a player is, as a line through several readings of its position against time, lined
/// up at the player's own steps. A player's reported position often moves in steps (mpv with
/// a null output: every 50–100 ms), so one reading lags by up to a step; the reading just
/// after a step is the one that says where the player is. Between two readings whose
/// positions differ, a step happened, at the position the later one says: the line goes
/// through that position at the middle of the two readings (off by at most half their
/// interval). Several steps are averaged, the narrow ones counting most. A player whose
/// position changes at every reading (fine-grained) gets a line through all of them; one whose
/// readings saw no step, the least it can be (the earliest reading, advanced since); a paused
/// one, its last reading.
public struct PositionLine: Sendable, Equatable {
    /// The position, in seconds, at ``at``.
    public var position: Double
    /// The date ``position`` is for, on the clock of the readings.
    public var at: Date
    /// How fast the position advances (1 is real time); 0 when paused.
    public var rate: Double
    /// How many readings, and how many steps among them, the line rests on.
    public var readings: Int
    public var steps: Int

    public init(position: Double, at: Date, rate: Double, readings: Int = 1, steps: Int = 0) {
        self.position = position
        self.at = at
        self.rate = rate
        self.readings = readings
        self.steps = steps
    }

    /// The line through `readings` (positions and when each was read, in the order read) of a
    /// player advancing at `rate` (0, or `paused`: it holds still); nil without readings.
    public init?(readings: [(position: Double, at: Date)], rate: Double, paused: Bool) {
        guard let last = readings.last else { return nil }
        let rate = paused ? 0 : rate
        guard rate > 0, readings.count > 1 else {
            self.init(position: last.position, at: last.at, rate: rate, readings: readings.count)
            return
        }
        // Offsets of the line, position − rate × time, with time counted from the last reading.
        let origin = last.at
        func time(_ i: Int) -> Double { readings[i].at.timeIntervalSince(origin) }
        var weighted = 0.0, weights = 0.0, steps = 0
        var envelope = -Double.infinity
        for i in readings.indices {
            envelope = max(envelope, readings[i].position - rate * time(i))
            guard i > 0, readings[i].position != readings[i - 1].position else { continue }
            steps += 1
            let width = max(time(i) - time(i - 1), 0.0005)
            let offset = readings[i].position - rate * (time(i - 1) + time(i)) / 2
            weighted += offset / (width * width)
            weights += 1 / (width * width)
        }
        let offset: Double
        if steps == readings.count - 1, readings.count > 2 {
            // It moves at every reading: it has no steps to speak of; the line through them all.
            offset = readings.indices.map { readings[$0].position - rate * time($0) }.reduce(0, +) / Double(readings.count)
        } else if steps > 0 {
            offset = weighted / weights
        } else {
            // No step seen: the step before the first reading put it where all of them say, so
            // it is at least that plus the time since the first (the tightest bound).
            offset = envelope
        }
        self.init(position: offset, at: origin, rate: rate, readings: readings.count, steps: steps)
    }

    /// The position at `date`.
    public func position(at date: Date) -> Double {
        position + rate * date.timeIntervalSince(at)
    }

    /// The same line with its dates moved by `seconds` (to another clock).
    public func shifted(by seconds: Double) -> PositionLine {
        var line = self
        line.at = at.addingTimeInterval(seconds)
        return line
    }
}
