@testable import BatonNet
import BatonClient
import BatonCore
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Busy polling (`--busy-poll`, `PeerConnection.Timing.busyPoll`): which sockets are polled,
/// that polling starves no one, and that it stops when the traffic does.
@Suite("Busy polling", .timeLimit(.minutes(1)))
struct BusyPollTests {
    @Test("each connected socket is found by its own descriptor, checked against its addresses")
    func descriptors() async throws {
        let group = clientGroup
        let accepted = NIOLockedValueBox<[any Channel]>([])
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                accepted.withLockedValue { $0.append(channel) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { _ = server.close() }
        var clients: [any Channel] = []
        for _ in 0..<3 { clients.append(try await ClientBootstrap(group: group).connect(to: server.localAddress!).get()) }
        defer { for client in clients { _ = client.close() } }
        #expect(await eventually { accepted.withLockedValue { $0.count } == 3 })

        let ends = clients + accepted.withLockedValue { $0 }
        let descriptors = ends.map { BusyPoll.descriptor(of: $0) }
        #expect(descriptors.allSatisfy { $0 != nil }, "NIO no longer says fd=N in its channels' descriptions: busy polling is off")
        #expect(Set(descriptors).count == ends.count, "two connections got the same descriptor: \(descriptors)")
        for (end, descriptor) in zip(ends, descriptors) {
            guard let descriptor else { continue }
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
            }
            #expect(named == 0)
            #expect(Int(UInt16(bigEndian: address.sin_port)) == end.remoteAddress?.port)
        }
        // No socket, or a description naming someone else's: nothing to poll.
        #expect(BusyPoll.descriptor(of: EmbeddedChannel()) == nil)
        #expect(BusyPoll.descriptor(of: server) == nil, "a listening socket has no peer")
    }

    @Test("the descriptor is read from fd=N and nothing else")
    func describedDescriptors() {
        #expect(BusyPoll.describedDescriptor("SocketChannel { BaseSocket { fd=17 }, active = true }") == 17)
        #expect(BusyPoll.describedDescriptor("fd=3") == 3)
        #expect(BusyPoll.describedDescriptor("SocketChannel { fd=, fd=4 }") == nil, "only the first fd= counts")
        #expect(BusyPoll.describedDescriptor("EmbeddedChannel") == nil)
        #expect(BusyPoll.describedDescriptor("") == nil)
        #expect(BusyPoll.describedDescriptor("fd=99999999999") == nil, "out of Int32's range")
    }

    @Test("a poll that finds nothing makes the poller sleep through 1, 2, 4... bursts; one that finds bytes, none")
    func backoff() async throws {
        // A loop of its own: the poller under test is its only one.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await backoff(on: group.next())
        } catch {
            try await group.shutdownGracefully()
            throw error
        }
        try await group.shutdownGracefully()
    }

    private func backoff(on loop: any EventLoop) async throws {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { for end in ends { closeDescriptor(end) } }
        let ours = ends[0]
        // Long enough that a loaded machine cannot let a window lapse before the loop looks.
        let poller = try #require(BusyPoll.on(loop, window: .milliseconds(500)))
        #expect(BusyPoll.on(loop, window: .zero) == nil, "a zero window polls nothing")
        /// Traffic on our end: whether the poller then polls.
        func burst() async throws -> Bool { try await loop.submit { poller.activity(on: ours); return poller.isPolling }.get() }
        func polling() async throws -> Bool { try await loop.submit { poller.isPolling }.get() }

        // Nothing comes: each fruitless poll doubles the bursts slept through.
        for skipped in [1, 2, 4] {
            #expect(try await burst())
            #expect(await eventually { (try? await polling()) == false }, "the poll never ended")
            for _ in 0..<skipped { #expect(try await !burst(), "a burst after a fruitless poll was polled") }
        }
        // Bytes are there when it polls (written first, so no window can lapse before they
        // come on a loaded machine): the poll ends at once, and the next burst is polled again.
        #expect(write(ends[1], "x", 1) == 1)
        #expect(try await burst())
        #expect(await eventually { (try? await polling()) == false })
        var byte: UInt8 = 0
        #expect(read(ours, &byte, 1) == 1)
        #expect(try await burst(), "a burst after a fruitful poll was not polled")
        #expect(await eventually { (try? await polling()) == false })
    }

    @Test("a connection in a stream of requests starves no other connection of the agent")
    func noStarvation() async throws {
        try await withAgent { agent in
            let busy = makeClient(), quiet = makeClient()
            defer {
                busy.shutdown()
                quiet.shutdown()
            }
            let (opened, status, detail) = await busy.openService("echo", app: Fixtures.services, on: agent.address)
            let channel = try #require(opened, "\(status): \(detail)")
            let stream = Task {
                var answered = 0
                for i in 0..<2000 {
                    let reply = await channel.send(["i": .int(Int64(i))])
                    if reply.status == .success, reply.message?["i"] == .int(Int64(i)) { answered += 1 }
                }
                return answered
            }
            var quietAnswers = 0
            for i in 0..<50 {
                let reply = try await quiet.send(["n": .int(Int64(i))], to: "echo", app: Fixtures.services, on: agent.address).get()
                if reply.status == .success, reply.message?["n"] == .int(Int64(i)) { quietAnswers += 1 }
            }
            #expect(quietAnswers == 50)
            #expect(await stream.value == 2000)
            channel.close()
        }
    }

    @Test("an agent stops polling when the traffic stops: idle, it uses no CPU")
    func idleAfterTraffic() async throws {
        // Not a timing: a poller that never stopped would use a whole CPU (100 ticks a second);
        // an idle agent uses next to none. The bound is far from both.
        try await withAgent(arguments: ["--busy-poll", "1ms"]) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            for i in 0..<200 {
                let reply = try await client.send(["i": .int(Int64(i))], to: "echo", app: Fixtures.services, on: agent.address).get()
                #expect(reply.status == .success)
            }
            try await Task.sleep(for: .milliseconds(200))
            let before = try cpuTicks(of: agent.pid)
            try await Task.sleep(for: .seconds(1))
            let used = try cpuTicks(of: agent.pid) - before
            #expect(used < 30, "the agent used \(used) ticks of CPU in 1 s without traffic")
        }
    }

    @Test("--busy-poll 0 serves as usual; a bad --busy-poll is a usage error")
    func option() async throws {
        try await withAgent(arguments: ["--busy-poll", "0"]) { agent in
            let client = makeClient()
            defer { client.shutdown() }
            let reply = try await client.send(["x": .int(1)], to: "echo", app: Fixtures.services, on: agent.address).get()
            #expect(reply.status == .success)
            #expect(reply.message?["x"] == .int(1))
        }
        for bad in ["soon", "-1us", "1s"] {
            let result = try await runBaton(["agent", "--busy-poll=\(bad)", "--listen", "127.0.0.1:0", "--no-mdns"])
            #expect(result.code == 2, "\(bad): \(result)")
            #expect(result.stderr.contains("Invalid --busy-poll '\(bad)'"), "\(result)")
        }
    }
}

/// User plus system CPU time of process `pid`, in clock ticks (/proc/PID/stat fields 14, 15).
private func cpuTicks(of pid: pid_t) throws -> Int {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name, which is in parentheses and may hold spaces.
    guard let close = stat.lastIndex(of: ")") else { throw AgentFailure("unreadable /proc/\(pid)/stat") }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // fields[0] is field 3 (state): utime is field 14, stime 15.
    guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
        throw AgentFailure("unreadable /proc/\(pid)/stat: \(stat)")
    }
    return user + system
}
