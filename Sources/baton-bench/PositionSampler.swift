import BatonAgent
import BatonCore
import Foundation
import NIOCore

/// A player's position read on its own socket (mpv's IPC, MPD's protocol), so the handoff
/// figures are measured from outside, not taken from the handoff's report: readings lined up
/// at the player's steps as a ``PositionLine``, the way the handoff itself aims.
struct PositionSampler: @unchecked Sendable {
    enum Socket {
        case mpv(MPVConnection)
        case mpd(MPDConnection)
    }

    /// One reading: the position, whether paused, and when (the middle of its round trip).
    struct Reading {
        let position: Double
        let paused: Bool
        let at: Date
    }

    let socket: Socket

    func read() throws -> Reading {
        switch socket {
        case .mpv(let mpv):
            let asked = Date()
            let position = mpv.property("time-pos"), pause = mpv.property("pause")
            let seconds = try position.wait().doubleValue
            let answered = Date()
            let paused = try pause.wait().boolValue ?? true
            guard let seconds else { throw BenchError("mpv has no position") }
            return Reading(position: seconds, paused: paused, at: asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2))
        case .mpd(let mpd):
            let asked = Date()
            let status = try mpd.command("status").wait()
            let answered = Date()
            guard let elapsed = status["elapsed"].flatMap(Double.init) else { throw BenchError("MPD has no position") }
            return Reading(position: elapsed, paused: status["state"] != "play", at: asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2))
        }
    }

    /// Readings every 2 ms for `seconds`.
    func sample(for seconds: Double) throws -> [Reading] {
        var readings: [Reading] = []
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            readings.append(try read())
            usleep(2000)
        }
        return readings
    }

    /// The line through readings of a player that plays (those before it first reads paused,
    /// less the last few: a reading as mpv pauses jumps by up to its audio buffer).
    static func playingLine(_ readings: [Reading]) -> PositionLine? {
        let playing = readings.prefix { !$0.paused }
        let steady = playing.count == readings.count ? Array(playing) : Array(playing.dropLast(3))
        return PositionLine(readings: steady.map { ($0.position, $0.at) }, rate: 1, paused: false)
    }
}

/// A ``PositionSampler`` reading on a thread of its own until stopped.
final class BackgroundSampler: @unchecked Sendable {
    private let sampler: PositionSampler
    private let lock = NSLock()
    private var readings: [PositionSampler.Reading] = []
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)

    init(_ sampler: PositionSampler) {
        self.sampler = sampler
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopping }) {
                if let reading = try? sampler.read() { lock.withLock { readings.append(reading) } }
                usleep(2000)
            }
            finished.signal()
        }
    }

    /// Stops, and answers what it read.
    func stop() -> [PositionSampler.Reading] {
        lock.withLock { stopping = true }
        finished.wait()
        return lock.withLock { readings }
    }
}
