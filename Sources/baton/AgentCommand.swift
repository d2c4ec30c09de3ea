import ArgumentParser
import BatonAgent
import BatonClient
import BatonCore
import BatonDiscovery
import BatonLua
import BatonNet
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `baton agent`: hosts this device's apps and serves clients.
struct AgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Host this device's apps and serve launches and app services.",
        discussion: """
            The configuration is Lua, like scripts:

              device{ name = "Living Room TV", kind = "tv" }
              handler{ scheme = "https", run = {"xdg-open", "{uri}"} }
              app{ id = "org.example.player", name = "Player", schemes = {"media"},
                   launch = function(uri, data) return "success" end,
                   services = { ["com.example.playback"] = function(msg, conn) return {ok = true} end } }

            Without --config the device is named after the host, of kind desktop, and opens \
            http and https URIs with xdg-open when it is installed. --name and --kind win over \
            the configuration. The device id, the account and this device's certificate are \
            kept in $XDG_CONFIG_HOME/baton (else ~/.config/baton), made on first use (see \
            baton account). Connections are mutual TLS 1.3: callers of this account are \
            served in full; callers of other accounts (anonymous) reach only apps with \
            anonymous = true, and get denied_by_remote_system (launch) or not_authorized \
            (open) for anything else. Devices join the account through this agent with a code \
            from baton account invite, when this device holds the account's key.

            The agent advertises itself over mDNS/DNS-SD as a _baton._tcp instance named \
            after the device, on every multicast-capable interface when listening on a wildcard \
            address, else on the interface holding the address (none for loopback). A name \
            already taken on the network becomes "NAME (2)", and the agent goes by it. \
            --no-mdns turns advertising off (clients then need --peer).

            Lua code in the configuration (launch functions, providers) has the whole baton \
            module: it reaches other devices as this device, over the same mutual TLS (plaintext \
            to loopback agents with --insecure), and finds them over mDNS (unless --no-mdns) \
            and through --peer. It runs on a thread of its own, apart from the connections: a \
            provider or launch function still running at its request's deadline is stopped \
            there (even inside a pattern match) and its caller answered unknown (timed out), \
            while other callers are served meanwhile. One stuck in a C function no deadline \
            reaches (a blocking os.execute) is ended by starting the agent again after \
            --lua-stall (30s). Its memory is capped at 256M.

            When ready, prints one line to stdout: listening on HOST:PORT id=ID name="NAME". \
            SIGINT or SIGTERM shuts down cleanly: open channels get canceled, requests in \
            flight get their answers. A configuration error exits 2 with file:line: message.
            """
    )

    @Option(help: ArgumentHelp("The agent's Lua configuration.", valueName: "file"))
    var config: String?

    @Option(help: "The device's display name.")
    var name: String?

    @Option(help: ArgumentHelp("The device's kind: \(DeviceKind.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "kind"))
    var kind: String?

    @Option(help: ArgumentHelp("Where to listen; port 0 picks a free one.", valueName: "host:port"))
    var listen: String = "0.0.0.0:47300"

    @Option(name: .customLong("media-port"), help: ArgumentHelp(
        "The port that serves this device's files to the targets of handoffs (plain HTTP, a token per file and target; 0, the default, picks a free one on the first share).",
        valueName: "port"))
    var mediaPort = 0

    @Flag(inversion: .prefixedNo, help: "Advertise this device over mDNS/DNS-SD (UDP 5353, shared with avahi and others).")
    var mdns = true

    @Option(name: .customLong("peer"), help: ArgumentHelp(
        "A device's agent at HOST:PORT that the configuration's Lua code (launch functions, providers) finds with baton.find, baton.devices and baton.watch, for networks without multicast (repeatable).",
        valueName: "host:port"))
    var peers: [String] = []

    @Flag(help: ArgumentHelp(
        "Plaintext instead of mutual TLS, for benchmarks and debugging: listens on a loopback --listen address only, serves every caller as same_account, and enrols no devices."))
    var insecure = false

    @Option(name: .customLong("max-message"), help: ArgumentHelp("The largest frame accepted: 1M, 256K.", valueName: "size"))
    var maxMessage: String = "1M"

    @Option(name: .customLong("busy-poll"), help: ArgumentHelp(
        "How long to keep polling a connection after traffic instead of sleeping: shorter round trips on machines slow to wake, at most this much CPU after each burst. 0 turns it off.",
        valueName: "duration"))
    var busyPoll: String = "50us"

    @Option(name: .customLong("lua-stall"), help: ArgumentHelp(
        "When the agent's Lua has not come back to its loop for this long (a launch function or provider stuck in a C function no deadline reaches, such as a blocking os.execute), the agent starts itself again (exec, same pid): connections drop, players it started are attached to again. Keep it above 10s (a task may run Lua that long without waiting). 0 never does.",
        valueName: "duration"))
    var luaStall: String = "30s"

    // For tests: how long a client may stay silent before it must have said Hello.
    @Option(name: .customLong("hello-timeout"), help: .hidden)
    var helloTimeout: String = "10s"

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(mediaPort) else { throw ValidationError("Invalid --media-port \(mediaPort): use 0 to 65535.") }
        if let kind, DeviceKind(rawValue: kind) == nil {
            throw ValidationError("Invalid --kind '\(kind)': use one of \(DeviceKind.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard let address = RemoteDevice.Endpoint(listen, allowingPortZero: true) else { throw ValidationError("Invalid --listen '\(listen)': use HOST:PORT, e.g. 127.0.0.1:0.") }
        if insecure, !ConnectionSecurity.isLoopback(address.host) {
            throw ValidationError("--insecure listens on loopback addresses only: use --listen 127.0.0.1:PORT or [::1]:PORT, not \(address.host).")
        }
        for peer in peers where DeviceAddress(peer) == nil {
            throw ValidationError("Invalid --peer '\(peer)': use HOST:PORT, e.g. 192.168.1.20:47300.")
        }
        guard let stall = DurationText.parse(luaStall), stall == .zero || stall >= .seconds(2) else {
            throw ValidationError("Invalid --lua-stall '\(luaStall)': use 0 or a duration of 2s or more, e.g. 30s.")
        }
        guard DurationText.parse(helloTimeout) != nil else {
            throw ValidationError("Invalid --hello-timeout '\(helloTimeout)': use a duration like 10s.")
        }
        guard let poll = DurationText.parse(busyPoll), poll <= .milliseconds(10) else {
            throw ValidationError("Invalid --busy-poll '\(busyPoll)': use a duration from 0 to 10ms, e.g. 50us.")
        }
        guard let size = ByteSizeText.parse(maxMessage), size >= 1024, size <= FrameLimits.hardLimit else {
            throw ValidationError("Invalid --max-message '\(maxMessage)': use a size from 1K to 1G, e.g. 1M.")
        }
    }

    func run() throws {
        // Before any thread exists: every thread inherits the mask, so SIGINT and SIGTERM wait
        // for sigwait below. A disposition inherited as "ignore" (nohup, background jobs of a
        // script) would drop them even while blocked, so reset it first.
        var shutdownSignals = sigset_t()
        sigemptyset(&shutdownSignals)
        for signo in [SIGINT, SIGTERM] {
            signal(signo, SIG_DFL)
            sigaddset(&shutdownSignals, signo)
        }
        pthread_sigmask(SIG_BLOCK, &shutdownSignals, nil)
        logging.bootstrap()
        broker.resolve(logging)
        let logger = Logger(label: "baton.agent")
        let format = logging.logFormat
        // One loop runs Lua, the other serves connections: a provider busy in Lua (a long
        // pattern match sent by a stranger) holds up no one else's describe or launch.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loop = group.next()
        let servingLoop = group.next()

        // The account and this device's certificate, made on first use.
        let credentials: DeviceCredentials
        let security: ConnectionSecurity
        do {
            let folder = ConfigurationFolder.standard
            credentials = try DeviceCredentials.loadOrCreate(in: folder, deviceName: name ?? Self.hostName())
            security = insecure ? .insecure : try .tls(credentials: credentials, in: folder)
        } catch {
            FailureReport.write(message: "\(error)", format: format)
            Baton.exitProcess(1)
        }
        let defaults = AgentConfiguration(
            device: DeviceInfo(id: credentials.deviceID, name: Self.hostName(), kind: .desktop),
            handlers: Self.defaultHandlers())
        let options = RuntimeOptions(
            maxMemory: RuntimeOptions.defaultAgentMemory, logger: logger, reportFailure: { FailureReport.write($0, format: format) })
        // Launch functions and providers reach other devices as this device, over the same
        // mutual TLS it serves with, and find them as `baton run` does.
        var network = DeviceAccess.Options()
        network.security = { security }
        network.deviceName = name ?? defaults.device.name
        network.discovery.peers = peers.compactMap { DeviceAddress($0) }
        if !mdns { network.discovery.mdns = nil }
        CommandBroker.reaching(&network, insecure: insecure)
        let agent: Agent
        do {
            agent = try Agent.start(config: config.map { .file($0) }, defaults: defaults, options: options, network: network, on: loop, servingLoop: servingLoop).wait()
        } catch let failure as ScriptFailure {
            if failure.traceback.isEmpty { FailureReport.write(failure, format: format) }
            Baton.exitProcess(2)
        }
        if name != nil || kind != nil {
            try loop.submit {
                agent.override(name: name, kind: kind.flatMap(DeviceKind.init(rawValue:)))
            }.wait()
        }
        let address = RemoteDevice.Endpoint(listen, allowingPortZero: true)!
        let limits = FrameLimits(maxFrameSize: ByteSizeText.parse(maxMessage)!)
        let server: AgentServer
        do {
            var timing = PeerConnection.Timing()
            timing.helloTimeout = TimeAmount(DurationText.parse(helloTimeout)!)
            timing.busyPoll = TimeAmount(DurationText.parse(busyPoll)!)
            agent.setMediaPort(mediaPort)
            server = try agent.listen(host: address.host, port: address.port, security: security, limits: limits, timing: timing).wait()
        } catch {
            FailureReport.write(message: "cannot listen on \(listen): \(error)", format: format)
            Baton.exitProcess(1)
        }
        let device = try loop.submit { agent.configuration.device }.wait()
        let bound = "\(server.localAddress.ipAddress ?? address.host):\(server.localAddress.port ?? address.port)"
        print("listening on \(bound) id=\(device.id) name=\"\(device.name)\"")
        fflush(nil)
        logger.info("agent ready", metadata: ["name": "\(device.name)", "address": "\(bound)"])
        let watchdog = LuaStallWatchdog.start(watching: loop, limit: DurationText.parse(luaStall)!, logger: logger)
        // Plaintext agents listen on loopback, where nothing is advertised: no account to show.
        let account = insecure ? "" : credentials.fingerprint.hex
        let advertiser = mdns
            ? advertise(agent, port: server.localAddress.port ?? address.port, account: account, listening: address.host, logger: logger) : nil

        let onBroker = brokerSide(device: device, server: server, security: security, limits: limits, port: server.localAddress.port, logger: logger)

        var received: Int32 = 0
        sigwait(&shutdownSignals, &received)
        logger.info("shutting down", metadata: ["signal": "\(received == SIGINT ? "SIGINT" : "SIGTERM")"])
        watchdog?.standDown()
        // The goodbye first, so that watchers drop the device before its port closes.
        try? advertiser?.stop().wait()
        onBroker?.leave()
        try? server.shutdown().wait()
        onBroker?.stop()
        CommandBroker.finish()
        // The players the agent started stop with it (each within its grace).
        try? agent.stop().wait()
        Baton.exitProcess(0)
    }

    /// The agent on the broker, when one is in use and the agent has an account (not
    /// `--insecure`); nil, and why in the log, when it cannot be.
    private func brokerSide(
        device: DeviceInfo, server: AgentServer, security: ConnectionSecurity, limits: FrameLimits, port: Int?, logger: Logger
    ) -> AgentBroker? {
        guard let settings = CommandBroker.access?.settings else { return nil }
        guard let trustStore = security.trustStore else {
            logger.notice("not on the broker: --insecure agents have no account to prove", metadata: ["broker": "\(settings.url)"])
            return nil
        }
        // Its TCP listeners, for a direct link later: the addresses it listens on.
        let host = RemoteDevice.Endpoint(listen, allowingPortZero: true)?.host ?? ""
        let endpoints = port.map { AgentBroker.endpoints(listening: host, port: $0) } ?? []
        do {
            return try AgentBroker.start(
                settings: settings, device: device, server: server, trustStore: trustStore, limits: limits, endpoints: endpoints,
                logger: logger)
        } catch {
            logger.error("not on the broker", metadata: ["broker": "\(settings.url)", "error": "\(error)"])
            return nil
        }
    }

    /// Starts advertising over mDNS; nil (and why, in the log) when it cannot.
    private func advertise(_ agent: Agent, port: Int, account: String, listening host: String, logger: Logger) -> AgentAdvertiser? {
        var configuration = MDNSTransport.Configuration()
        if let names = AgentAdvertiser.interfaces(forListening: host) {
            guard !names.isEmpty else {
                logger.notice("not advertised over mDNS: no multicast interface holds the listening address", metadata: ["address": "\(host)"])
                return nil
            }
            configuration.interfaceFilter = { names.contains($0) }
        }
        do {
            return try AgentAdvertiser.start(agent: agent, port: port, account: account, configuration: configuration, logger: logger).wait()
        } catch {
            logger.error("not advertised over mDNS: UDP 5353 cannot be used; clients need --peer", metadata: ["error": "\(error)"])
            return nil
        }
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "baton" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// xdg-open for http and https, when it is installed.
    static func defaultHandlers() -> [String: AgentConfiguration.Handler] {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let found = path.split(separator: ":").contains { access("\($0)/xdg-open", X_OK) == 0 }
        guard found, let command = try? ArgvTemplate(["xdg-open", "{uri}"]) else { return [:] }
        return ["http": .init(scheme: "http", command: command), "https": .init(scheme: "https", command: command)]
    }
}
