@testable import BatonAgent
import BatonCore
import Foundation
import NIOCore
import Testing

/// What the MPRIS players measure here, printed (`MPRIS figures:`), and held against what
/// their states say: the position steps are no coarser than the granularity stated.
@Suite("MPRIS players' figures", .serialized, .timeLimit(.minutes(2)))
struct MPRISFiguresTests {
    @Test("mpv with mpv-mpris: round trip, position after play, seek latency, position steps")
    func mpv() async throws {
        try await withMPRISMPV { fixture in
            try await withMPRISConnection("org.mpris.MediaPlayer2.mpv", bus: fixture.bus.address, on: fixture.loop) { raw in
                try await measure("mpv", player: fixture.player, raw: raw, media: fixture.media)
            }
        }
    }

    @Test("VLC: round trip, position after play, seek latency, position steps")
    func vlc() async throws {
        try await withVLC { fixture in
            try await measure("VLC", player: fixture.player, raw: fixture.raw, media: fixture.media)
        }
    }
}

/// Measures `player` (and reads it on `raw`) and prints the figures.
private func measure(_ name: String, player: MPRISPlayer, raw: MPRISConnection, media: TestMedia) async throws {
    // Round trip: a Get of Position, 50 times.
    var trips: [Double] = []
    for _ in 0..<50 {
        let reading = try await mprisPosition(raw)
        trips.append(reading.answered.timeIntervalSince(reading.asked))
    }
    // Where play starts: the proof's first reading against the position asked, and a reading
    // 2 s on against where the proof says it should be by then.
    var starts: [Double] = [], drifts: [Double] = []
    for start in [10.0, 30.0, 20.0] {
        let proof = try await player.play(playRequest(media.sweep, from: start)).get()
        starts.append(proof.position - start)
        try await Task.sleep(for: .seconds(1))
        let later = try await mprisPosition(raw)
        let laterAt = later.asked.addingTimeInterval(later.answered.timeIntervalSince(later.asked) / 2)
        drifts.append(later.seconds - (proof.position + laterAt.timeIntervalSince(proof.at)))
    }
    // Seeks: control(.seek) from the call to its answer (it answers once the player is there).
    var seeks: [Double] = []
    for target in [40.0, 15.0, 25.0, 5.0, 45.0] {
        let asked = Date()
        try await player.control(.seek(target)).get()
        seeks.append(Date().timeIntervalSince(asked))
        let landed = try await mprisPosition(raw)
        #expect(landed.seconds >= target - 0.35 && landed.seconds <= target + 0.35 + landed.answered.timeIntervalSince(asked),
                "\(name) asked for \(target), at \(landed.seconds)")
    }
    let step = try await positionSteps(raw)
    let stated = try await player.state().get()
    print("""
        MPRIS figures: \(name): round trip median \(ms(median(trips))) (max \(ms(trips.max() ?? 0))); \
        play starts \(ms(starts)) after the position asked (proof's first reading); \
        1 s on, \(ms(drifts)) from where the proof puts it; \
        seek answered in \(ms(seeks)); \
        position steps median \(ms(step)); \
        stated granularity \(stated.positionGranularity.map(ms) ?? "none"), seek latency \(stated.seekLatency.map(ms) ?? "none")
        """)
    let granularity = try #require(stated.positionGranularity)
    #expect(step <= granularity * 1.2, "\(name) moves in steps of \(step) s, its state says \(granularity)")
    // Where play started is where it was asked, to the player's steps and a loaded machine.
    for error in starts { #expect(abs(error) < granularity + 0.5, "\(name) started \(error) s off") }
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

private func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }

private func ms(_ values: [Double]) -> String { "[" + values.map(ms).joined(separator: ", ") + "]" }
