import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Python scripts the interop and hostile-input tests run inside a namespace.
enum MDNSInteropScripts {
    /// Registers a `_baton._tcp` service with python-zeroconf: argv NAME ADDRESS PORT KEY=VALUE...
    /// (the TXT record); prints REGISTERED once probing is over, then runs until killed.
    static let register = """
        import sys, time, socket, uuid
        from zeroconf import Zeroconf, ServiceInfo, IPVersion
        name, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
        txt = dict(pair.split("=", 1) for pair in sys.argv[4:])
        zc = Zeroconf(ip_version=IPVersion.V4Only)
        info = ServiceInfo("_baton._tcp.local.", name + "._baton._tcp.local.",
            addresses=[socket.inet_aton(address)], port=port, properties=txt,
            server="py-" + uuid.uuid4().hex[:8] + ".local.")
        zc.register_service(info)
        print("REGISTERED", flush=True)
        while True:
            time.sleep(1)
        """

    /// Browses `_baton._tcp` with python-zeroconf and prints one JSON object a line per
    /// resolved instance: {"event", "name", "port", "addresses", "txt"}; runs until killed.
    static let browse = """
        import json, time
        from zeroconf import Zeroconf, ServiceBrowser, ServiceListener, IPVersion
        def show(zc, type_, name, event):
            info = zc.get_service_info(type_, name, timeout=3000)
            if info is None:
                print(json.dumps({"event": event, "name": name, "unresolved": True}), flush=True)
                return
            txt = {k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()}
            print(json.dumps({"event": event, "name": name, "port": info.port,
                              "addresses": sorted(info.parsed_addresses()), "txt": txt}), flush=True)
        class Listener(ServiceListener):
            def add_service(self, zc, type_, name): show(zc, type_, name, "add")
            def update_service(self, zc, type_, name): show(zc, type_, name, "update")
            def remove_service(self, zc, type_, name):
                print(json.dumps({"event": "remove", "name": name}), flush=True)
        zc = Zeroconf(ip_version=IPVersion.All)
        browser = ServiceBrowser(zc, "_baton._tcp.local.", Listener())
        while True:
            time.sleep(1)
        """

    /// Sends datagrams (argv: the interface's IPv4 address, its name, rounds, then each
    /// datagram in hex) to 224.0.0.251:5353 and ff02::fb:5353, ROUNDS times: from an ephemeral
    /// port (queries, to responders), and through raw sockets from port 5353 (the source port
    /// of responses, which browsers read) without binding 5353, so no answer meant for the
    /// processes under test is taken from them. Prints SENT N at the end.
    static let sendDatagrams = """
        import socket, struct, sys, binascii, time
        address, interface, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
        payloads = [binascii.unhexlify(h) for h in sys.argv[4:]]
        index = socket.if_nametoindex(interface)
        plain4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        plain6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        raw4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        raw6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_UDP)
        raw6.setsockopt(socket.IPPROTO_IPV6, 7, 6)  # IPV6_CHECKSUM: the kernel fills the UDP checksum
        for s in (plain4, raw4):
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        for s in (plain6, raw6):
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
        sent = 0
        for _ in range(rounds):
            for p in payloads:
                udp = struct.pack("!HHHH", 5353, 5353, 8 + len(p), 0) + p
                for s, data, to in ((plain4, p, ("224.0.0.251", 5353)), (raw4, udp, ("224.0.0.251", 0)),
                                    (plain6, p, ("ff02::fb", 5353, 0, index)), (raw6, udp, ("ff02::fb", 0, 0, index))):
                    try:
                        s.sendto(data, to)
                        sent += 1
                    except OSError as e:
                        print("ERROR", len(data), e, flush=True)
                time.sleep(0.002)
        print("SENT", sent, flush=True)
        """
}

/// Datagrams no mDNS stack should choke on: bad name pointers, pointer loops, truncation,
/// absurd counts, reserved label types, overlong names, and seeded random bytes.
enum HostileDatagrams {
    static func header(flags: UInt16, questions: UInt16 = 0, answers: UInt16 = 0, authority: UInt16 = 0, additional: UInt16 = 0) -> [UInt8] {
        [0, 0] + [flags, questions, answers, authority, additional].flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    static func name(_ labels: String...) -> [UInt8] {
        labels.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    static let query: UInt16 = 0
    static let response: UInt16 = 0x8400
    static let ptrIN: [UInt8] = [0, 12, 0, 1]
    static let ttl: [UInt8] = [0, 0, 0x11, 0x94]
    /// `_baton._tcp.local` right after the header, at offset 12: a pointer target.
    static let service = name("_baton", "_tcp", "local")

    static var all: [[UInt8]] {
        var datagrams: [[UInt8]] = [
            [],
            [0x12],
            Array(header(flags: response, answers: 1).prefix(7)),
            // Absurd counts and nothing after them.
            header(flags: response, questions: 0xffff, answers: 0xffff, authority: 0xffff, additional: 0xffff),
            header(flags: query, questions: 0xffff) + service + ptrIN,
            header(flags: response, answers: 0xffff) + service + ptrIN + ttl + [0, 2, 0xc0, 0x0c],
            // A name that points at itself, two that point at each other, past the end, into the header.
            header(flags: query, questions: 1) + [0xc0, 0x0c] + ptrIN,
            header(flags: query, questions: 1) + [0xc0, 0x0e, 0xc0, 0x0c] + ptrIN,
            header(flags: query, questions: 1) + [0xc0, 0xff] + ptrIN,
            header(flags: query, questions: 1) + [0xc0, 0x02] + ptrIN,
            header(flags: response, answers: 1) + [0x04] + Array("Evil".utf8) + [0xc0, 0x0c] + ptrIN + ttl + [0, 2, 0xc0, 0x0c],
            // Reserved label types (0x40, 0x80) and a label running past the end.
            header(flags: query, questions: 1) + [0x40, 0x61, 0] + ptrIN,
            header(flags: query, questions: 1) + [0x80, 0x61, 0] + ptrIN,
            header(flags: query, questions: 1) + [0x3f, 0x61, 0x62],
            // A name longer than 255 bytes.
            header(flags: query, questions: 1) + Array(repeating: [0x3f] + Array(repeating: 0x78, count: 63), count: 5).flatMap { $0 } + [0] + ptrIN,
            // A PTR answer whose data runs past the end of the message.
            header(flags: response, answers: 1) + service + ptrIN + ttl + [0xff, 0xff] + [0x04] + Array("Evil".utf8),
            // A PTR answer whose target is a pointer to itself (offset 12 + 19 + 10 = 41).
            header(flags: response, answers: 1) + service + ptrIN + ttl + [0, 2, 0xc0, 41],
        ]
        // A real-looking announcement whose SRV target loops, whose TXT strings overrun their
        // record, and whose A record is 3 bytes long.
        var announcement = header(flags: response, answers: 1, additional: 3) + service + ptrIN + ttl
        let instance = announcement.count + 2
        announcement += [0, 7, 0x04] + Array("Evil".utf8) + [0xc0, 0x0c]
        announcement += [0xc0, UInt8(instance), 0, 33, 0x80, 1] + ttl + [0, 8, 0, 0, 0, 0, 0x1f, 0x40]
        announcement += [0xc0, UInt8(announcement.count)]  // the SRV target: this very pointer
        announcement += [0xc0, UInt8(instance), 0, 16, 0x80, 1] + ttl + [0, 4, 0x20, 0x69, 0x64, 0x3d]
        announcement += [0xc0, UInt8(instance), 0, 1, 0x80, 1] + ttl + [0, 3, 10, 77, 0]
        datagrams.append(announcement)
        // A chain of 120 pointers, each to the one before, ending at `a`.
        var chain = header(flags: response, answers: 120) + name("a")
        var previous = 12
        for _ in 0..<120 {
            let here = chain.count
            chain += [0xc0 | UInt8(previous >> 8), UInt8(previous & 0xff), 0, 1, 0, 1] + ttl + [0, 4, 10, 77, 0, 9]
            previous = here
        }
        datagrams.append(chain)
        // Pointers everywhere, 4000 bytes of them.
        datagrams.append(header(flags: response, answers: 2000, additional: 2000) + Array(repeating: 0xc0, count: 4000))
        // Seeded random bytes behind plausible headers.
        var seed: UInt64 = 0x5eed_ba70
        func next() -> UInt64 {
            seed &+= 0x9e37_79b9_7f4a_7c15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        for i in 0..<24 {
            let counts = (0..<4).map { _ in UInt16(next() % 6) }
            let body = (0..<Int(next() % 600)).map { _ in UInt8(truncatingIfNeeded: next()) }
            datagrams.append(header(flags: i % 2 == 0 ? response : query, questions: counts[0], answers: counts[1], authority: counts[2], additional: counts[3]) + body)
        }
        return datagrams
    }

    static var hex: [String] {
        all.map { $0.map { String(format: "%02x", $0) }.joined() }
    }
}

/// Hostile datagrams on the link, python-zeroconf on both sides, and Lua scripts using
/// discovery, all between processes in network namespaces.
@Suite("mDNS: hostile packets, python-zeroconf and Lua, between processes", .timeLimit(.minutes(3)))
struct MDNSInteropTests {
    @Test("malformed datagrams on 5353: agents and watchers carry on")
    func malformedPackets() async throws {
        try await NamespacePair.with { pair in
            async let agentA = pair.agent(in: pair.a, name: "Sturdy TV", kind: "tv")
            async let agentB = pair.agent(in: pair.b, name: "Sturdy Speaker", kind: "speaker")
            let (tv, speaker) = try await (agentA, agentB)
            try await MDNSFixtures.waitAdvertised([tv, speaker])
            // -v: the watcher logs each datagram it drops, which shows the noise reached it.
            let watcher = try pair.watcher(in: pair.b, ["-v"])
            try await watcher.waitFor("added Sturdy TV") { $0.event == "added" && $0.id == tv.id }
            try await watcher.waitFor("added Sturdy Speaker") { $0.event == "added" && $0.id == speaker.id }

            // Noise in both namespaces, several rounds, while everything runs.
            let hex = HostileDatagrams.hex
            let senders = try [pair.a, pair.b].map { namespace in
                try pair.python(in: namespace, MDNSInteropScripts.sendDatagrams, [pair.address(of: namespace), pair.interface(of: namespace), "5"] + hex)
            }
            for sender in senders {
                let done = try await sender.waitForLine("SENT") { $0.hasPrefix("SENT ") }
                #expect(done == "SENT \(hex.count * 5 * 4)", "\(sender.output)")
            }

            #expect(await eventually { watcher.log.contains("mDNS: dropped a malformed packet") }, "\(watcher.transcript)")

            // Everyone is still there and still works.
            #expect(tv.isRunning, "\(tv.log)")
            #expect(speaker.isRunning, "\(speaker.log)")
            #expect(watcher.process.isRunning, "\(watcher.transcript)")
            let late = try await pair.agent(in: pair.a, name: "Late Arrival", kind: "phone")
            let added = try await watcher.waitFor("added Late Arrival") { $0.event == "added" && $0.id == late.id }
            #expect(added.event.name == "Late Arrival" && added.event["address"] == late.address, "\(added.event)")
            for (agent, namespace) in [(tv, pair.b), (speaker, pair.a)] {
                let described = try await pair.baton(in: namespace, ["describe", agent.name, "--json"])
                #expect(described.code == 0 && (try? JSON.parse(described.stdout))?["device"]?["id"] == .string(agent.id), "\(described)")
            }
            try await MDNSFixtures.waitAdvertised([late])
            try await MDNSFixtures.devices(pair, in: pair.a, expecting: [tv.id, speaker.id, late.id])
            // The garbage shows up as no device: nothing but the three agents was ever added.
            #expect(watcher.events().allSatisfy { $0.id == nil || [tv.id, speaker.id, late.id].contains($0.id!) }, "\(watcher.transcript)")
            #expect(!watcher.events().contains { $0.event == "removed" }, "\(watcher.transcript)")
        }
    }

    @Test("python-zeroconf sees every agent with its TXT, also next to agents in its own namespace")
    func zeroconfBrowsesAgents() async throws {
        try await NamespacePair.with { pair in
            async let tvAgent = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Zeroconf TV", kind: "tv", model: "Z1", manufacturer: "Zed"))
            async let phoneAgent = pair.agent(in: pair.b, name: "Zeroconf Phone", kind: "phone")
            let agents = try await [tvAgent, phoneAgent]
            try await MDNSFixtures.waitAdvertised(agents)
            // One browser on each host: each shares 5353 with an agent.
            for namespace in [pair.a, pair.b] {
                let browser = try pair.python(in: namespace, MDNSInteropScripts.browse)
                for agent in agents {
                    let line = try await browser.waitForLine("\(agent.name), resolved") { line in
                        guard let object = try? JSON.parse(line) else { return false }
                        return object["name"] == .string("\(agent.name)._baton._tcp.local.") && object["port"] != nil
                    }
                    let object = try JSON.parse(line)
                    #expect(object["port"]?.intValue == Int64(agent.port), "\(line)")
                    #expect(object["addresses"]?.arrayValue?.contains(.string(agent.host)) == true, "\(line)")
                    let txt = object["txt"]
                    #expect(txt?["id"] == .string(agent.id), "\(line)")
                    #expect(txt?["kind"] == .string(agent.name == "Zeroconf TV" ? "tv" : "phone"), "\(line)")
                    #expect(txt?["platform"] == .string("linux"), "\(line)")
                    #expect(txt?["v"] == .string("1"), "\(line)")
                    if agent.name == "Zeroconf TV" {
                        #expect(txt?["model"] == .string("Z1") && txt?["mfr"] == .string("Zed"), "\(line)")
                    }
                }
                browser.process.signal(SIGKILL)
            }
        }
    }

    @Test("a service python-zeroconf registers is listed by baton devices and reached by its id, and by the name its agent proves")
    func batonFindsZeroconfService() async throws {
        try await NamespacePair.with { pair in
            // The real agent behind the python-advertised name, with mDNS off.
            let relay = try await pair.agent(in: pair.b, name: "Hidden Agent", kind: "speaker", arguments: ["--no-mdns"])
            // A baton agent in zeroconf's namespace too, answering on 5353 beside it.
            let neighbour = try await pair.agent(in: pair.b, name: "Neighbour", kind: "tv")
            // Under another name, but with the agent's own id and account: TLS then proves the
            // agent behind the address is that device of this account.
            let registered = try pair.python(in: pair.b, MDNSInteropScripts.register, [
                "Py Relay", relay.host, String(relay.port), "id=\(relay.id)", "kind=speaker", "platform=linux", "v=1",
                "model=Snake", "mfr=PSF", "acct=\(TestAccount.shared.credentials.fingerprint.hex)",
            ])
            try await registered.waitForLine("REGISTERED") { $0 == "REGISTERED" }
            try await MDNSFixtures.waitAdvertised([neighbour])

            for namespace in [pair.a, pair.b] {
                let listed = try await MDNSFixtures.devices(pair, in: namespace, expecting: [relay.id, neighbour.id])
                if let device = listed[relay.id] {
                    #expect(device["name"] == .string("Py Relay"), "\(device.serialized())")
                    #expect(device["kind"] == .string("speaker") && device["platform"] == .string("linux"), "\(device.serialized())")
                    #expect(device["model"] == .string("Snake") && device["manufacturer"] == .string("PSF"), "\(device.serialized())")
                    #expect(device["address"] == .string(relay.address), "\(device.serialized())")
                }
                // The advertised name is a hint the agent does not confirm: it goes by its own.
                let byAdvertisedName = try await pair.baton(in: namespace, ["describe", "Py Relay", "--json"])
                #expect(byAdvertisedName.code == 68, "\(byAdvertisedName)")
                let described = try await pair.baton(in: namespace, ["describe", relay.id, "--json"])
                #expect(described.code == 0, "\(described)")
                let object = try? JSON.parse(described.stdout)
                #expect(object?["address"] == .string(relay.address), "\(described)")
                #expect(object?["device"]?["name"] == .string("Hidden Agent"), "\(described)")
                // The name it gave over TLS is what its name resolves to from then on.
                let byOwnName = try await pair.baton(in: namespace, ["describe", "Hidden Agent", "--json"])
                #expect(byOwnName.code == 0, "\(byOwnName)")
                #expect((try? JSON.parse(byOwnName.stdout))?["device"]?["id"] == .string(relay.id), "\(byOwnName)")
            }
            let watcher = try pair.watcher(in: pair.a)
            let added = try await watcher.waitFor("added Py Relay") { $0.event == "added" && $0.id == relay.id }
            #expect(added.event.name == "Py Relay", "\(added.event)")
        }
    }

    @Test("Lua: baton.watch, baton.devices{kind}, baton.find and baton.launch by name over mDNS")
    func luaDiscovery() async throws {
        try await NamespacePair.with { pair in
            async let tvAgent = pair.agent(in: pair.a, config: MDNSFixtures.config(name: "Living Room TV", kind: "tv", model: "X-900"))
            async let speakerAgent = pair.agent(in: pair.b, config: MDNSFixtures.config(name: "Kitchen Speaker", kind: "speaker"))
            let (tv, speaker) = try await (tvAgent, speakerAgent)
            try await MDNSFixtures.waitAdvertised([tv, speaker])
            try pair.directory.write("discover.lua", #"""
                local function say(...) print(...) io.stdout:flush() end
                local tvs = baton.devices({ kind = "tv" }, { timeout = 10 })
                for _, d in ipairs(tvs) do say("tv", d.name, d.id, d.kind, d.model, d.address, d.status) end
                local tv, why = baton.find("Living Room TV", { timeout = 10 })
                say("found", tv and tv.id, why)
                say("launch", baton.launch(tv, "media:from-lua", { app = "org.test.player" }))
                local nobody, status = baton.find("nobody", { timeout = 0.5 })
                say("nobody", tostring(nobody), status)
                local seen, completed = {}, false
                local w = baton.watch(nil, {
                  added = function(d) seen[d.name] = d.id say("added", d.name, d.id) end,
                  enumeration_completed = function() completed = true say("enumeration_completed") end,
                })
                while not (completed and seen["Living Room TV"] and seen["Kitchen Speaker"]) do baton.sleep(0.05) end
                w:stop()
                say("stopped")
                """#)
            let run = try await pair.baton(in: pair.b, ["run", "--timeout", "25s", pair.directory.file("discover.lua")])
            #expect(run.code == 0, "\(run)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.hasPrefix("tv\t") } == ["tv\tLiving Room TV\t\(tv.id)\ttv\tX-900\t\(tv.address)\tavailable"], "\(run)")
            #expect(lines.contains("found\t\(tv.id)\tnil"), "\(run)")
            #expect(lines.contains { $0.hasPrefix("launch\tsuccess") }, "\(run)")
            #expect(tv.home.read("launched") == "media:from-lua\n")
            #expect(lines.contains("nobody\tnil\tnot_found"), "\(run)")
            #expect(lines.contains("added\tLiving Room TV\t\(tv.id)"), "\(run)")
            #expect(lines.contains("added\tKitchen Speaker\t\(speaker.id)"), "\(run)")
            #expect(lines.contains("enumeration_completed"), "\(run)")
            #expect(lines.last == "stopped", "\(run)")
        }
    }

    @Test("Lua: baton.find of a name two devices share (one over mDNS, one --peer) is ambiguous")
    func luaFindAmbiguous() async throws {
        try await NamespacePair.with { pair in
            let advertised = try await pair.agent(in: pair.a, name: "Twin", kind: "tv")
            let unadvertised = try await pair.agent(in: pair.a, name: "Twin", kind: "tv", arguments: ["--no-mdns"])
            try await MDNSFixtures.waitAdvertised([advertised], as: ["Twin"])
            try pair.directory.write("ambiguous.lua", #"""
                local d, status, detail = baton.find("Twin", { timeout = 10 })
                print("twin", tostring(d), status, detail)
                local byID = baton.find(arg[1], { timeout = 10 })
                print("by id", byID and byID.name, byID and byID.address)
                """#)
            let run = try await pair.baton(in: pair.b, [
                "run", "--timeout", "25s", "--peer", unadvertised.address, pair.directory.file("ambiguous.lua"), unadvertised.id,
            ])
            #expect(run.code == 0, "\(run)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            let twin = lines.first { $0.hasPrefix("twin\t") } ?? ""
            #expect(twin.hasPrefix("twin\tnil\tambiguous\t2 devices are named \"Twin\""), "\(run)")
            #expect(twin.contains(advertised.id) && twin.contains(unadvertised.id), "\(run)")
            #expect(lines.contains("by id\tTwin\t\(unadvertised.address)"), "\(run)")
        }
    }
}
