@testable import BatonAgent
import BatonClient
import BatonCore
import Foundation
import Logging
import NIOCore
import Testing

/// Handoffs between an agent with a plain mpv and an agent fronting an mpv it reaches only
/// over MPRIS (mpv-mpris on a private bus), read on each mpv's own IPC.
@Suite("Handoffs to and from a real MPRIS player", .serialized, .timeLimit(.minutes(3)))
struct MPRISHandoffTests {
    @Test("mpv → an MPRIS mpv and back: the target's own IPC says it plays on from where the source stopped; each report's error is within its tolerance")
    func mpvToMPRISAndBack() async throws {
        try await withMPRISMPV { fixture in
            let socket = fixture.media.directory + "/phone-mpv.sock"
            let (phone, phoneTarget) = try await HandoffAgents.start("""
                device{ name = "Phone", kind = "phone" }
                app{ id = "player", player = { backend = "mpv", socket = "\(socket)", args = {"--ao=null", "--no-video"} } }
                """)
            let (laptop, laptopTarget) = try await HandoffAgents.start("""
                device{ name = "Laptop", kind = "laptop" }
                app{ id = "desktop", player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.mpv", bus = "\(fixture.bus.address)", timeout = 10 } }
                """)
            let client = HandoffAgents.client(), options = HandoffAgents.options
            #expect(try await HandoffAgents.play(fixture.media.sweep, from: 10, app: "player", on: phoneTarget, with: client) != nil)
            let phoneMPV = try await MPVConnection.connect(path: socket, on: fixture.loop, timeout: .seconds(20)).get()
            defer { phoneMPV.close() }

            let there = await client.handoff(from: phoneTarget, to: laptopTarget, options: options)
            #expect(there.status == .success, "\(there.message)")
            #expect(abs(there.positionErrorMs ?? 999) <= 250, "\(there.message)")
            let stopped = try await phoneMPV.state().get()
            let playing = try await fixture.ipc.state().get()
            #expect(stopped.paused && !playing.paused && playing.uri == fixture.media.sweep, "source \(stopped), target \(playing)")
            #expect((playing.position ?? 0) >= (stopped.position ?? 99) - 0.25, "target \(playing), source \(stopped)")

            let back = await client.handoff(from: laptopTarget, to: phoneTarget, options: options)
            #expect(back.status == .success, "\(back.message)")
            #expect(abs(back.positionErrorMs ?? 999) <= 250, "\(back.message)")
            let held = try await fixture.ipc.state().get()
            let resumed = try await phoneMPV.state().get()
            #expect(held.paused && !resumed.paused && (resumed.position ?? 0) >= (held.position ?? 99) - 0.25, "MPRIS mpv \(held), phone \(resumed)")
            for (name, report) in [("mpv → MPRIS", there), ("MPRIS → mpv", back)] {
                Logger(label: "mpris-handoff").info("\(name): error \(report.positionErrorMs ?? .nan) ms after \(report.seeks) seeks (start \(report.startErrorMs ?? .nan) ms), overlap \(report.overlapMs ?? .nan) ms, latency \(report.latencyMs) ms")
            }
            try await phone.stop().get()
            try await laptop.stop().get()
        }
    }
}
