import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A device whose cable is pulled, as `baton devices --watch --liveness 5s` on another host
/// sees it, browsing mDNS and polling the device as a `--peer`: no goodbye, its records still in the watcher's cache, the connection to it open.
/// The watcher's host sits on a bridge that keeps its link up (a switch), so only the device's
/// side goes dark.
@Suite("Liveness: a device whose link is pulled, and plugged back", .timeLimit(.minutes(3)))
struct LinkPulledTests {
    /// Puts `a`'s address on a bridge holding its end of the veth and a spare veth pair of its
    /// own: `b`'s link going down no longer takes `a`'s carrier with it.
    static func bridge(_ pair: NamespacePair) throws {
        let (ip, a) = (NamespacePair.ip, pair.a)
        try NamespacePair.command(ip, "-n", a, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
        try NamespacePair.command(ip, "-n", a, "addr", "del", "10.77.0.1/24", "dev", "v0")
        try NamespacePair.command(ip, "-n", a, "link", "set", "v0", "master", "br0")
        try NamespacePair.command(ip, "-n", a, "link", "add", "v2", "type", "veth", "peer", "name", "v3")
        try NamespacePair.command(ip, "-n", a, "link", "set", "v2", "master", "br0")
        try NamespacePair.command(ip, "-n", a, "link", "set", "v2", "up")
        try NamespacePair.command(ip, "-n", a, "link", "set", "v3", "up")
        try NamespacePair.command(ip, "-n", a, "addr", "add", "10.77.0.1/24", "dev", "br0")
        try NamespacePair.command(ip, "-n", a, "link", "set", "br0", "up")
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let state = try NamespacePair.command(ip, "-n", pair.a, "-o", "link", "show", "br0")
            if state.contains("LOWER_UP") { return }
            usleep(10_000)
        }
        throw NamespacePair.Failure("br0 in \(pair.a) has no carrier after 10 s")
    }

    @Test("link pulled: removed within the liveness window (well before the 30 s request deadline); plugged back: added again")
    func linkPulledAndBack() async throws {
        try await NamespacePair.with { pair in
            try Self.bridge(pair)
            let watcher = try pair.watcher(in: pair.a, ["--liveness", "5s"])
            let agent = try await pair.agent(in: pair.b, name: "Unplugged \(DeviceNameTests.tag())", kind: "tv")
            let added = try await watcher.waitFor("added \(agent.name)") { $0.event == "added" && $0.id == agent.id }
            #expect(added.event["address"] == agent.address, "\(added.event)")
            // The same device as a static peer, polled rather than browsed.
            let polling = try pair.watcher(in: pair.a, ["--no-mdns", "--peer", agent.address, "--liveness", "5s"])
            let peerAdded = try await polling.waitFor("added \(agent.name) (peer)") { $0.event == "added" && $0.id == agent.id }
            // A liveness round or two over the open connection first.
            try await Task.sleep(for: .seconds(2))

            let beforePull = watcher.count
            try pair.setLink(pair.b, up: false)
            // Liveness 5 s: removed within about 6 s. 20 s tells that from waiting out a request's
            // 30 s without being a timing assertion.
            let removed = try await watcher.waitFor("removed \(agent.name)", from: beforePull, within: 20) {
                $0.event == "removed" && $0.id == agent.id
            }
            #expect(removed.event.name == agent.name, "\(removed.event)")
            let peerRemoved = try await polling.waitFor("removed \(agent.name) (peer)", from: peerAdded.index, within: 20) {
                $0.event == "removed" && $0.id == agent.id
            }
            #expect(agent.isRunning, "the agent itself went on: \(agent.log)")

            let beforePlug = watcher.count
            try pair.setLink(pair.b, up: true)
            try pair.waitForCarrier(pair.b)
            // Back within about a second; 8 s is far from the 11.6 s of a check stuck on the
            // old connection.
            let back = try await watcher.waitFor("added \(agent.name) again", from: beforePlug, within: 8) {
                $0.event == "added" && $0.id == agent.id
            }
            #expect(back.event["status"] == "available" && back.event["address"] == agent.address, "\(back.event)")
            // A peer is polled every liveness / 3, each poll waiting two thirds of the window at most.
            try await polling.waitFor("added \(agent.name) again (peer)", from: peerRemoved.index, within: 15) {
                $0.event == "added" && $0.id == agent.id
            }
        }
    }
}
