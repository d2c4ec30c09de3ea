import ArgumentParser
import BatonClient
import BatonCore
import BatonNet
import BatonSecurity
import Foundation
import NIOCore

/// `baton devices`: the devices discovery finds, as a table, JSON, or a stream of events.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the devices Baton can reach, or watch them come and go.",
        discussion: """
            Waits until enumeration is over (every --peer has answered or failed, and the \
            first mDNS query window has passed) or --timeout, whichever comes first, then \
            prints one line per device: name, kind, platform, transport (local or cloud), \
            routes (every way to reach it: HOST:PORT, broker:ID), id. Filters work as \
            in Rome: different filters must all match; the values of one repeated filter \
            are alternatives.

            With --watch, prints events until interrupted: added, updated, removed, \
            enumeration_completed, error. With --json, the list is one JSON array of \
            {id, name, kind, platform, model, manufacturer, address, addresses, routes, transport, \
            status, account, proven, sources}: account is what the device's source claims, \
            proven whether a handshake proved it of this account (or you enrolled it) and each event is one JSON object on a line: \
            {"event": "added", "device": {...}}.

            Examples:
              baton devices
              baton devices --kind tv --kind speaker --json
              baton devices --peer 192.168.1.20:47300 --watch --json

            Exit codes: 0 listed (even none, unless --required); 68 --required and no device \
            matches (not_found); 2 usage.
            """
    )

    @Flag(help: "Stream added, updated and removed events until interrupted.")
    var watch = false

    @Flag(help: "Print JSON: one array, or one object per event with --watch.")
    var json = false

    @Flag(help: "Exit 68 (not_found) when no device matches, so that a script or a cron job can stop there.")
    var required = false

    @Option(name: .customLong("kind"), help: ArgumentHelp("Only devices of this kind (repeatable): \(DeviceKind.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "kind"))
    var kinds: [String] = []

    @Option(help: ArgumentHelp("Only devices reached this way: local, cloud or any.", valueName: "transport"))
    var transport = "any"

    @Option(name: .customLong("platform"), help: ArgumentHelp("Only devices of this platform (repeatable): \(Platform.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "platform"))
    var platforms: [String] = []

    @Option(help: ArgumentHelp("available (the default: devices whose agent answers) or any (also those that stopped answering).", valueName: "status"))
    var status = "available"

    @Option(help: ArgumentHelp("Print the list after this long even if enumeration is not over: 500ms, 2s.", valueName: "duration"))
    var timeout = "3s"

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var client: ClientOptions

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        _ = try filter()
        if required && watch { throw ValidationError("--required lists once: it does not go with --watch.") }
        guard let duration = DurationText.parse(timeout), duration >= .zero else {
            throw ValidationError("Invalid --timeout '\(timeout)': use a duration like 500ms, 2s or 1m.")
        }
    }

    /// The filter the options describe.
    func filter() throws -> DeviceFilter {
        do {
            var filter = try DeviceFilter.parse(kinds: kinds, platforms: platforms, transport: transport, status: status)
            filter.authorization = client.authorizationKind
            return filter
        } catch {
            throw ValidationError("Invalid --\(error.field) '\(error.value)': use one of \(error.allowed.joined(separator: ", ")).")
        }
    }

    func run() throws {
        logging.bootstrap()
        broker.resolve(logging)
        let filter = try filter()
        let baton = client.makeClient(logging)
        let directory = try discovery.makeDirectory(client: baton)
        let loop = baton.eventLoop
        if watch {
            try loop.submit {
                directory.start()
                let known = baton.options.security.trustStore?.known
                _ = directory.watch(filter) { event in Self.emit(event, json: json, known: known) }
            }.wait()
            // Until interrupted: SIGINT's default action ends the process.
            while true { sleep(3600) }
        }
        let done = loop.makePromise(of: Void.self)
        try loop.submit {
            directory.start()
            _ = directory.watch(filter) { event in
                if case .enumerationCompleted = event { done.succeed() }
                if case .error(let problem) = event { StandardError.write("baton: \(problem)\n") }
            }
            loop.scheduleTask(in: TimeAmount(DurationText.parse(timeout) ?? .seconds(3))) { done.succeed() }
        }.wait()
        try done.futureResult.wait()
        let devices = try loop.submit { directory.devices(matching: filter) }.wait()
        baton.finish()
        if json {
            let known = baton.options.security.trustStore?.known
            print(JSON.array(devices.map { DeviceJSON.object($0, known: known) }).serialized())
        } else {
            print(Self.table(devices))
        }
        if required && devices.isEmpty {
            // The list (empty) is the one JSON value on stdout; the failure goes to stderr.
            FailureOutput(json: false, logging: logging).exit(CommandFailure(status: "not_found", cause: .notFound, detail: "no device matches"))
        }
        Baton.exitProcess(0)
    }

    static func emit(_ event: DeviceDirectory.Event, json: Bool, known: KnownDevices? = nil) {
        let line: String
        switch event {
        case .added(let d), .updated(let d), .removed(let d):
            let name = switch event { case .added: "added"; case .updated: "updated"; default: "removed" }
            line = json
                ? JSON.object([.init("event", .string(name)), .init("device", DeviceJSON.object(d, known: known))]).serialized()
                : "\(name) \(d.info.name) (\(d.info.kind.rawValue), \(d.transport.rawValue), \(routes(d)), \(d.info.id))"
        case .enumerationCompleted:
            line = json ? #"{"event":"enumeration_completed"}"# : "enumeration completed"
        case .error(let problem):
            line = json ? JSON.object([.init("event", .string("error")), .init("message", .string(problem))]).serialized() : "error: \(problem)"
        }
        print(line)
        fflush(nil)
    }

    /// Every route of `device`, best first (`10.0.0.2:47300,broker:ID`), or `-`.
    static func routes(_ device: RemoteDevice) -> String {
        device.routes.isEmpty ? "-" : device.routes.map(\.description).joined(separator: ",")
    }

    static func table(_ devices: [RemoteDevice]) -> String {
        let header = ["NAME", "KIND", "PLATFORM", "TRANSPORT", "ROUTES", "ID"]
        let rows = devices.map {
            [$0.info.name, $0.info.kind.rawValue, $0.info.platform.rawValue, $0.transport.rawValue, routes($0), $0.info.id]
        }
        guard !rows.isEmpty else { return "no devices found" }
        let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// Devices as JSON, the same shape everywhere Baton prints one.
enum DeviceJSON {
    /// `proven`: whether a handshake proved the device of this account (or the holder enrolled
    /// it), as `known` (the account's pins) has it; `account` is only what its source claims;
    /// `routes` every way to reach it, best first (`{"kind": "tcp", "address": "h:p"}`,
    /// `{"kind": "broker", "device": ID}`).
    static func object(_ device: RemoteDevice, known: KnownDevices? = nil) -> JSON {
        .object([
            .init("id", .string(device.info.id)),
            .init("name", .string(device.info.name)),
            .init("kind", .string(device.info.kind.rawValue)),
            .init("platform", .string(device.info.platform.rawValue)),
            .init("model", .string(device.info.model)),
            .init("manufacturer", .string(device.info.manufacturer)),
            .init("address", device.endpoints.first.map { .string($0.description) } ?? .null),
            .init("addresses", .array(device.endpoints.map { .string($0.description) })),
            .init("routes", .array(device.routes.map(route))),
            .init("transport", .string(device.transport.rawValue)),
            .init("status", .string(device.status.rawValue)),
            .init("account", .string(device.account)),
            .init("proven", .bool(known?.isOwn(device.info.id) ?? false)),
            .init("sources", .array(device.sources.sorted().map { .string($0.rawValue) })),
        ])
    }

    /// One route as JSON, by kind.
    static func route(_ route: DeviceRoute) -> JSON {
        switch route {
        case .tcp(let endpoint): .object([.init("kind", .string("tcp")), .init("address", .string(endpoint.description))])
        case .broker(let broker): .object([.init("kind", .string("broker")), .init("device", .string(broker.deviceID))])
        }
    }
}

/// How commands find devices: mDNS/DNS-SD on the LAN (unless --no-mdns), and static peers.
struct DiscoveryOptions: ParsableArguments {
    @Flag(inversion: .prefixedNo, help: "Browse the LAN over mDNS/DNS-SD for _baton._tcp agents.")
    var mdns = true

    @Option(name: .customLong("peer"), help: ArgumentHelp("A device's agent at HOST:PORT, polled with Describe, for networks without multicast (repeatable).", valueName: "host:port"))
    var peers: [String] = []

    @Option(help: ArgumentHelp("How long a device may stay silent before it counts as gone: 30s (the default), 10s.", valueName: "duration"))
    var liveness = "30s"

    func validate() throws {
        for peer in peers where DeviceAddress(peer) == nil {
            throw ValidationError("Invalid --peer '\(peer)': use HOST:PORT, e.g. 192.168.1.20:47300.")
        }
        guard let duration = DurationText.parse(liveness), duration >= .milliseconds(300) else {
            throw ValidationError("Invalid --liveness '\(liveness)': use a duration of at least 300ms, like 10s or 30s.")
        }
    }

    /// The directory's options these describe.
    var directoryOptions: DeviceDirectory.Options {
        var options = DeviceDirectory.Options()
        options.peers = peers.compactMap { DeviceAddress($0) }
        options.liveness = TimeAmount(DurationText.parse(liveness) ?? .seconds(30))
        if !mdns { options.mdns = nil }
        return options
    }

    /// A directory for `client`, whose `same_account` filters compare with the account the
    /// client connects as.
    func makeDirectory(client: BatonClient) throws -> DeviceDirectory {
        var options = directoryOptions
        if let account = client.options.security.trustStore?.credentials.fingerprint.hex { options.account = account }
        CommandBroker.discovering(&options, client: client)
        return DeviceDirectory(client: client, options: options)
    }
}
