import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Two private network namespaces, `a` and `b`, joined by a veth pair: two hosts on one link,
/// with real multicast between them and nobody else on it. Needs root (tests run as root, in
/// CI too).
///
/// `a` has `v0` with 10.77.0.1/24 and `b` has `v1` with 10.77.0.2/24, each with an IPv6
/// link-local address usable at once (duplicate address detection is off, so no 2-second
/// wait). Each namespace's `lo` is up too, but lo is not multicast-capable, so mDNS runs on
/// the veth ends only.
struct TestNetwork {
    /// The namespaces' names, `baton-test-<random>-a` and `-b`.
    let a: String
    let b: String

    struct CommandFailed: Error, CustomStringConvertible {
        var command: [String]
        var status: Int32
        var output: String
        var description: String { "\(command.joined(separator: " ")) exited with \(status): \(output)" }
    }

    struct TimedOut: Error {}

    private init() throws {
        let prefix = "baton-test-" + String(UInt32.random(in: .min ... .max), radix: 16)
        a = prefix + "-a"
        b = prefix + "-b"
        do {
            for namespace in [a, b] {
                try Self.run("ip", "netns", "add", namespace)
                try Self.run(
                    "ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
                    "net.ipv6.conf.default.accept_dad=0")
                try Self.run("ip", "-n", namespace, "link", "set", "lo", "up")
            }
            // Made inside the namespaces, so the names never clash with another test's.
            try Self.run("ip", "link", "add", "v0", "netns", a, "type", "veth", "peer", "name", "v1", "netns", b)
            try Self.run("ip", "-n", a, "addr", "add", "10.77.0.1/24", "dev", "v0")
            try Self.run("ip", "-n", b, "addr", "add", "10.77.0.2/24", "dev", "v1")
            try Self.run("ip", "-n", a, "link", "set", "v0", "up")
            try Self.run("ip", "-n", b, "link", "set", "v1", "up")
            // The kernel reports the carrier a little later (linkwatch); mDNS wants a running link.
            try Self.waitForCarrier(namespace: a, interface: "v0")
            try Self.waitForCarrier(namespace: b, interface: "v1")
        } catch {
            remove()
            throw error
        }
    }

    /// Runs `body` with a new network, which is deleted afterwards whatever happens.
    static func with<T>(_ body: (TestNetwork) async throws -> T) async throws -> T {
        let network = try TestNetwork()
        do {
            let result = try await body(network)
            network.remove()
            return result
        } catch {
            network.remove()
            throw error
        }
    }

    /// Waits up to 5 seconds for `interface` in `namespace` to be up with a carrier.
    static func waitForCarrier(namespace: String, interface: String) throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let state = try run("ip", "-n", namespace, "-o", "link", "show", interface)
            if state.contains("LOWER_UP"), state.contains("state UP") { return }
            usleep(10_000)
        }
        throw TimedOut()
    }

    /// Deletes both namespaces, and with them the veth pair.
    func remove() {
        for namespace in [a, b] {
            _ = try? Self.run("ip", "netns", "delete", namespace)
        }
    }

    /// A one-thread event loop group whose thread has entered `namespace`: sockets it makes and
    /// interfaces it lists are the namespace's. (Network namespaces are per thread on Linux.)
    static func eventLoopGroup(in namespace: String) async throws -> MultiThreadedEventLoopGroup {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await group.next().submit {
                let descriptor = open("/var/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw IOError(errnoCode: errno, reason: "open netns \(namespace)") }
                defer { close(descriptor) }
                guard try enterNamespace(descriptor) == 0 else {
                    throw IOError(errnoCode: errno, reason: "setns \(namespace)")
                }
            }.get()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        return group
    }

    /// `setns(descriptor, CLONE_NEWNET)`. Glibc declares `setns` only under `_GNU_SOURCE`, which
    /// Swift's Glibc module does not set, so it is looked up at run time.
    private static func enterNamespace(_ descriptor: CInt) throws -> CInt {
        typealias SetNS = @convention(c) (CInt, CInt) -> CInt
        let cloneNewNet: CInt = 0x4000_0000  // CLONE_NEWNET, <linux/sched.h>
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "setns") else {
            throw IOError(errnoCode: ENOSYS, reason: "dlsym setns")
        }
        return unsafeBitCast(symbol, to: SetNS.self)(descriptor, cloneNewNet)
    }

    /// Runs a command to completion, throwing if it fails.
    @discardableResult
    static func run(_ arguments: String...) throws -> String {
        try run(arguments)
    }

    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandFailed(command: arguments, status: process.terminationStatus, output: output)
        }
        return output
    }
}
