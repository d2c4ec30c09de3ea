@testable import BatonAgent
import BatonClient
import BatonCore
import BatonLua
import BatonNet
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

/// Handoffs between an agent with a real mpv and an agent fronting a real Kodi (which runs
/// no agent: the Kodi backend reaches it over JSON-RPC), read on each player's own interface:
/// Kodi's JSON-RPC and mpv's IPC. Both agents listen on loopback in this process.
@Suite("Handoffs to and from a real Kodi", .serialized, .withKodi, .timeLimit(.minutes(5)))
struct KodiHandoffTests {
    @Test("mpv → Kodi and back: Kodi's own time says it plays on from where mpv stopped, and mpv from where Kodi stopped; each report's error is within its tolerance")
    func mpvToKodiAndBack() async throws {
        let kodi = try suiteKodi()
        let folder = NSTemporaryDirectory() + "baton-kodi-handoff-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let socket = folder + "/mpv.sock"
        let (phone, phoneTarget) = try await HandoffAgents.start("""
            device{ name = "Phone", kind = "phone" }
            app{ id = "player", player = { backend = "mpv", socket = "\(socket)", args = {"--ao=null", "--no-video"} } }
            """)
        let (tv, tvTarget) = try await HandoffAgents.start("""
            device{ name = "Kodi TV", kind = "tv" }
            app{ id = "kodi", player = { backend = "kodi", address = "127.0.0.1:\(kodi.port)", timeout = 20 } }
            """)
        let client = HandoffAgents.client(), handoff = HandoffAgents.options
        #expect(try await HandoffAgents.play(kodi.media.sweep, from: 10, app: "player", on: phoneTarget, with: client) != nil)

        let there = await client.handoff(from: phoneTarget, to: tvTarget, options: handoff)
        var back = HandoffReport(status: .cancelled)
        #expect(there.status == .success, "\(there.message)")
        #expect(abs(there.positionErrorMs ?? 999) <= 250, "\(there.message)")
        try await withLoop { loop in
            let own = try await KodiConnection.connect(host: "127.0.0.1", port: kodi.port, on: loop, timeout: .seconds(20)).get()
            defer { own.close() }
            let mpv = try await MPVConnection.connect(path: socket, on: loop, timeout: .seconds(20)).get()
            defer { mpv.close() }
            let stopped = try await mpv.state().get()
            #expect(stopped.paused && stopped.uri == kodi.media.sweep, "\(stopped)")
            try await expectAdvancing(own)
            let now = try await kodiTime(own)
            // Kodi has played on since mpv stopped: at least where mpv stopped.
            #expect(now.seconds >= (stopped.position ?? 99) - 0.25, "Kodi at \(now.seconds), mpv stopped at \(stopped.position ?? -1)")

            back = await client.handoff(from: tvTarget, to: phoneTarget, options: handoff)
            #expect(back.status == .success, "\(back.message)")
            #expect(abs(back.positionErrorMs ?? 999) <= 250, "\(back.message)")
            let held = try await kodiHeld(own)
            let playing = try await mpv.state().get()
            #expect(held.speed == 0, "Kodi's speed \(held.speed): not paused")
            #expect(!playing.paused && (playing.position ?? 0) >= held.seconds - 0.25, "mpv \(playing), Kodi held at \(held.seconds)")
        }
        // The figures, for the record: what a handoff to Kodi costs and how close it lands.
        for (name, report) in [("mpv → Kodi", there), ("Kodi → mpv", back)] {
            Logger(label: "kodi-handoff").info("\(name): error \(report.positionErrorMs ?? .nan) ms after \(report.seeks) seeks (start \(report.startErrorMs ?? .nan) ms), overlap \(report.overlapMs ?? .nan) ms, latency \(report.latencyMs) ms")
        }
        try await phone.stop().get()
        try await tv.stop().get()
    }

    @Test("MPD → Kodi → an MPRIS mpv → MPD: each pair's handoff succeeds, each target read on its own interface, each source let go")
    func acrossKinds() async throws {
        let kodi = try suiteKodi()
        try await withMPD { mpd in
            try await withMPRISMPV { fixture in
                let (speaker, speakerTarget) = try await HandoffAgents.start("""
                    device{ name = "Speaker", kind = "speaker" }
                    app{ id = "mpd", player = { backend = "mpd", address = "127.0.0.1:\(mpd.port)", music_directory = "\(mpd.music)", timeout = 20 } }
                    """)
                let (tv, tvTarget) = try await HandoffAgents.start("""
                    device{ name = "Kodi TV", kind = "tv" }
                    app{ id = "kodi", player = { backend = "kodi", address = "127.0.0.1:\(kodi.port)", timeout = 20 } }
                    """)
                let (laptop, laptopTarget) = try await HandoffAgents.start("""
                    device{ name = "Laptop", kind = "laptop" }
                    app{ id = "desktop", player = { backend = "mpris", bus_name = "org.mpris.MediaPlayer2.mpv", bus = "\(fixture.bus.address)", timeout = 10 } }
                    """)
                let client = HandoffAgents.client(), options = HandoffAgents.options
                // A file under MPD's music directory: MPD plays only those, the others any path.
                let file = mpd.music + "/sweep.flac"
                #expect(try await HandoffAgents.play(file, from: 10, app: "mpd", on: speakerTarget, with: client) != nil)
                let own = try await KodiConnection.connect(host: "127.0.0.1", port: kodi.port, on: fixture.loop, timeout: .seconds(20)).get()
                defer { own.close() }

                let toKodi = await client.handoff(from: speakerTarget, to: tvTarget, options: options)
                #expect(toKodi.status == .success && abs(toKodi.positionErrorMs ?? 999) <= 250, "\(toKodi.message)")
                try await expectAdvancing(own)
                #expect(try await mpd.connection.command("status").get()["state"] == "pause")

                let toMPRIS = await client.handoff(from: tvTarget, to: laptopTarget, options: options)
                #expect(toMPRIS.status == .success && abs(toMPRIS.positionErrorMs ?? 999) <= 250, "\(toMPRIS.message)")
                let kodiHeldAt = try await kodiHeld(own)
                let laptopPlays = try await fixture.ipc.state().get()
                #expect(kodiHeldAt.speed == 0, "Kodi's speed \(kodiHeldAt.speed): not paused")
                #expect(!laptopPlays.paused && laptopPlays.uri == file && (laptopPlays.position ?? 0) >= kodiHeldAt.seconds - 0.25, "\(laptopPlays), Kodi held at \(kodiHeldAt.seconds)")

                let toMPD = await client.handoff(from: laptopTarget, to: speakerTarget, options: options)
                #expect(toMPD.status == .success && abs(toMPD.positionErrorMs ?? 999) <= 250, "\(toMPD.message)")
                let laptopHeld = try await fixture.ipc.state().get()
                let status = try await mpd.connection.command("status").get()
                let elapsed = status["elapsed"].flatMap(Double.init) ?? 0
                #expect(laptopHeld.paused && status["state"] == "play" && elapsed >= (laptopHeld.position ?? 99) - 0.25, "MPD \(status), laptop \(laptopHeld)")
                for (name, report) in [("MPD → Kodi", toKodi), ("Kodi → MPRIS", toMPRIS), ("MPRIS → MPD", toMPD)] {
                    Logger(label: "kodi-handoff").info("\(name): error \(report.positionErrorMs ?? .nan) ms after \(report.seeks) seeks (start \(report.startErrorMs ?? .nan) ms), overlap \(report.overlapMs ?? .nan) ms, latency \(report.latencyMs) ms")
                }
                try await speaker.stop().get()
                try await tv.stop().get()
                try await laptop.stop().get()
            }
        }
    }
}
