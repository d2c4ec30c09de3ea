import BatonDiscovery
import Foundation
import NIOCore
import NIOPosix
import Testing

/// Interoperability with python-zeroconf, software no one here wrote, on real multicast in the
/// test network: it browses our responder, and our browser finds its service.
@Suite("mDNS with python-zeroconf", .timeLimit(.minutes(1)))
struct MDNSZeroconfInteropTests {
    private static let browseScript = """
        import sys, time
        from zeroconf import Zeroconf, ServiceBrowser, ServiceListener, IPVersion
        # argv: how long to browse at most; optionally a file to make once a service is added,
        # in which case the script ends at the first removal.
        flag = sys.argv[2] if len(sys.argv) > 2 else None
        removed = []
        class Listener(ServiceListener):
            def add_service(self, zc, type_, name):
                info = zc.get_service_info(type_, name, timeout=3000)
                txt = {k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()}
                print("ADD", name, info.port, info.server, sorted(info.parsed_addresses()), sorted(txt.items()), flush=True)
                if flag: open(flag, "w").close()
            def remove_service(self, zc, type_, name):
                print("REMOVE", name, flush=True)
                removed.append(name)
            def update_service(self, zc, type_, name):
                print("UPDATE", name, flush=True)
        zc = Zeroconf(ip_version=IPVersion.All)
        ServiceBrowser(zc, "_baton._tcp.local.", Listener())
        end = time.time() + float(sys.argv[1])
        while time.time() < end and not (flag and removed):
            time.sleep(0.05)
        zc.close()
        """

    private static let registerScript = """
        import sys, time, socket
        from zeroconf import Zeroconf, ServiceInfo, IPVersion
        zc = Zeroconf(ip_version=IPVersion.V4Only)
        info = ServiceInfo("_baton._tcp.local.", "Python Box._baton._tcp.local.",
            addresses=[socket.inet_aton("10.77.0.2")], port=7100, properties={"id": "py-1"}, server="pybox.local.")
        zc.register_service(info)
        print("REGISTERED", flush=True)
        # argv[2], if given: a file to make once registered.
        if len(sys.argv) > 2: open(sys.argv[2], "w").close()
        time.sleep(float(sys.argv[1]))
        zc.unregister_service(info)
        zc.close()
        """

    /// Starts `script` with python3 in `namespace`; its output is read once it exits.
    private func python(_ script: String, in namespace: String, _ arguments: String...) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ip", "netns", "exec", namespace, "python3", "-c", script] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        return (process, pipe)
    }

    @Test func zeroconfBrowsesOurResponderAndSeesItsGoodbye() async throws {
        try await TestNetwork.with { network in
            let group = try await TestNetwork.eventLoopGroup(in: network.a)
            let transport = try await MDNSTransport.start(on: group.next()).get()
            let responder = MDNSResponder(
                instanceName: "Living Room TV", port: 7000, txt: [entry("id", "tv-1"), entry("kind", "tv")],
                transport: transport)
            _ = try await responder.start().get()
            // No fixed sleeps: the responder stops once zeroconf has seen it (a loaded machine
            // may take seconds to start python), and zeroconf ends once it has seen it go.
            let flag = FileManager.default.temporaryDirectory.appendingPathComponent("baton-zc-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: flag) }
            let (process, pipe) = try python(Self.browseScript, in: network.b, "40", flag)
            let deadline = ContinuousClock.now + .seconds(30)
            while !FileManager.default.fileExists(atPath: flag), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            try await responder.stop().get()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(
                output.contains(
                    "ADD Living Room TV._baton._tcp.local. 7000 \(responder.hostName) ['10.77.0.1', 'fe80::"),
                "\(output)")
            #expect(output.contains("[('id', 'tv-1'), ('kind', 'tv')]"), "\(output)")
            #expect(output.contains("REMOVE Living Room TV._baton._tcp.local."), "\(output)")
            try await transport.close().get()
            try await group.shutdownGracefully()
        }
    }

    @Test func ourBrowserFindsAZeroconfServiceAndItsGoodbye() async throws {
        try await TestNetwork.with { network in
            let group = try await TestNetwork.eventLoopGroup(in: network.a)
            let transport = try await MDNSTransport.start(on: group.next()).get()
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transport, onEvent: { recorder.record($0) })
            browser.start()
            let (process, pipe) = try python(Self.registerScript, in: network.b, "2")
            let (added, _) = try await recorder.waitFor { $0.added != nil }
            let service = try #require(added.added)
            #expect(service.instanceName == "Python Box")
            #expect(service.port == 7100)
            #expect(service.hostName == "pybox.local.")
            #expect(service.addresses.map(\.bytes) == [[10, 77, 0, 2]])
            #expect(service.txtValue("id") == "py-1")
            let (removed, _) = try await recorder.waitFor { $0.removed != nil }
            #expect(removed.removed?.0 == "Python Box")
            #expect(removed.removed?.1 == .goodbye)
            _ = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            try await browser.stop().get()
            try await transport.close().get()
            try await group.shutdownGracefully()
        }
    }
    /// python-zeroconf multicasts a record at most once a second (RFC 6762 §6): a query less than
    /// a second after it multicast the PTR gets its answer a second later, after a listing's
    /// window has closed. The one-shot query is answered at once by unicast (§6.7), so the
    /// listing has it.
    @Test func aBrowserFindsAZeroconfServiceWithinItsWindowRightAfterAnotherQuerier() async throws {
        try await TestNetwork.with { network in
            let group = try await TestNetwork.eventLoopGroup(in: network.a)
            let loop = group.next()
            let other = try await MDNSTransport.start(on: loop).get()
            let transport = try await MDNSTransport.start(on: loop).get()
            let flag = FileManager.default.temporaryDirectory.appendingPathComponent("baton-zc-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: flag) }
            let (process, pipe) = try python(Self.registerScript, in: network.b, "20", flag)
            // Its announcements are over once it says it registered.
            let deadline = ContinuousClock.now + .seconds(30)
            while !FileManager.default.fileExists(atPath: flag), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }

            // The other querier: multicast queries from port 5353 until zeroconf multicasts the
            // PTR, which it then will not multicast again for a second.
            let instance = DNSName("Python Box._baton._tcp.local.")
            let multicast = loop.makePromise(of: Void.self)
            let querying = try await loop.submit {
                var seen = false
                _ = other.addListener { event in
                    guard !seen, case .message(let received) = event, received.message.isResponse,
                          (received.message.answers + received.message.additionals).contains(where: {
                              $0.name == .batonService && $0.data == .ptr(instance) && $0.ttl > 0
                          }) else { return }
                    seen = true
                    multicast.succeed()
                }
                return loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(500)) { _ in
                    for interface in other.interfaces {
                        other.send(
                            DNSMessage(questions: [DNSQuestion(name: .batonService, type: .ptr)]),
                            to: .multicast(interfaceIndex: interface.index, family: .ipv4))
                    }
                }
            }.get()
            try await multicast.futureResult.get()
            // zeroconf reckons the second from when it hears its own answer back, which python
            // may take a moment to get to: a query before that would be answered at once.
            try await Task.sleep(for: .milliseconds(200))
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transport, onEvent: { recorder.record($0) })
            browser.start()
            querying.cancel()
            _ = try await recorder.waitFor { $0 == .enumerationCompleted }
            let events = recorder.events
            let added = events.firstIndex { $0.added?.instanceName == "Python Box" }
            let completed = events.firstIndex(of: .enumerationCompleted)
            #expect(added.map { $0 < completed! } == true, "added before enumeration completed: \(events)")
            if let added {
                let service = try #require(events[added].added)
                #expect(service.port == 7100 && service.txtValue("id") == "py-1")
                #expect(service.addresses.map(\.bytes) == [[10, 77, 0, 2]])
            }
            // SIGKILL, as SIGTERM (Process.terminate) left it running to the end here.
            kill(process.processIdentifier, SIGKILL)
            _ = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            try await browser.stop().get()
            try await other.close().get()
            try await transport.close().get()
            try await group.shutdownGracefully()
        }
    }

    @Test func onOneHostBatonAndZeroconfSharePort5353() async throws {
        try await TestNetwork.with { network in
            let group = try await TestNetwork.eventLoopGroup(in: network.a)
            let transport = try await MDNSTransport.start(on: group.next()).get()
            // zeroconf binds 5353 after us, in the same namespace.
            let (register, registerOutput) = try python(Self.registerScript, in: network.a, "8")
            let (browse, browseOutput) = try python(Self.browseScript, in: network.a, "8")
            let responder = MDNSResponder(instanceName: "Same Host", port: 7000, transport: transport)
            _ = try await responder.start().get()
            let recorder = EventRecorder()
            let browser = MDNSBrowser(transport: transport, onEvent: { recorder.record($0) })
            browser.start()
            let (added, _) = try await recorder.waitFor { $0.added?.instanceName == "Python Box" }
            #expect(added.added?.port == 7100)
            let output = String(decoding: browseOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            browse.waitUntilExit()
            #expect(output.contains("ADD Same Host._baton._tcp.local. 7000"), "\(output)")
            _ = registerOutput.fileHandleForReading.readDataToEndOfFile()
            register.waitUntilExit()
            try await responder.stop().get()
            try await browser.stop().get()
            try await transport.close().get()
            try await group.shutdownGracefully()
        }
    }
}
