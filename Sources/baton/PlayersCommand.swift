import ArgumentParser
import BatonCore
import BatonLua
import BatonNet
import Foundation
import Logging
import NIOPosix

/// `baton players`: what plays where, once or live.
struct PlayersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "players",
        abstract: "Show what every player plays, or one device's, once or live.",
        discussion: """
            Finds the devices (as baton devices does, or the one DEVICE names), asks each \
            app that answers baton.playback for its state, and prints one line a player: \
            device, app, playing/paused/idle, position/duration, URI. With --json, one JSON \
            array of {device: {id, name}, app, state: {uri, title, position, duration, \
            paused, rate, volume, queue, index, at, granularity, seek_latency}}.

            With --watch, prints each player's changes as its own events report them \
            (started, track_changed, paused, resumed, ended, stopped, position_jumped: the \
            agent pushes them, nothing is polled), until interrupted; devices found later are \
            added. Lines are: device, app, change, playing/paused/idle, position/duration, \
            URI; with --json one object a line: {"event": "added" or "changed", "change", \
            "device", "app", "state"}.

            Examples:
              baton players
              baton players "Living Room TV" --watch
              baton players --peer 192.168.1.20:47300 --no-mdns --json

            Exit codes: 0 listed (even none); 68 DEVICE is not known; 69 DEVICE cannot be \
            reached; 77 a device of another account; 2 usage.
            """
    )

    @Argument(help: "One device's players only: a name, an id or HOST:PORT.")
    var device: String?

    @Flag(help: "Print each player's changes as they come, until interrupted.")
    var watch = false

    @Flag(help: "Print JSON: one array, or one object a line with --watch.")
    var json = false

    @Option(help: ArgumentHelp("How long to look for devices before listing: 500ms, 2s.", valueName: "duration"))
    var timeout = "3s"

    @Flag(help: ArgumentHelp(ConnectionSecurity.insecureHelp))
    var insecure = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard let duration = DurationText.parse(timeout), duration > .zero else {
            throw ValidationError("Invalid --timeout '\(timeout)': use a duration like 500ms, 2s or 1m.")
        }
    }

    func run() throws {
        logging.bootstrap()
        broker.resolve(logging)
        let format = logging.logFormat
        var options: [JSON.Member] = [
            .init("watch", .bool(watch)), .init("json", .bool(json)),
            .init("timeout", .double(DurationText.parse(timeout)?.inSeconds ?? 3)),
        ]
        if let device { options.append(.init("device", .string(device))) }
        var network = DeviceAccess.Options()
        network.discovery = discovery.directoryOptions
        network.security = { [insecure] in try ConnectionSecurity.forCommandLine(insecure: insecure) }
        CommandBroker.reaching(&network, insecure: insecure)
        let runOptions = RuntimeOptions(
            maxMemory: RuntimeOptions.defaultScriptMemory, logger: Logger(label: "baton.players"),
            reportFailure: { failure in
                // A device not found or not reachable is said as baton devices says it: the
                // message alone, not the driver's place and traceback.
                guard let errorClass = failure.errorClass, errorClass != .script else { return FailureReport.write(failure, format: format) }
                FailureReport.write(message: Self.withoutPlace(failure.message), format: format, errorClass: errorClass)
            })
        // Ended by SIGINT or SIGTERM as a shell expects (128 + the signal), even when started
        // with them blocked or ignored (a test runner, a supervisor).
        Interruption.catchSignals()
        Interruption.watch { signal, _ in Interruption.die(by: signal) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let outcome = try LuaRuntime.run(
            .string(Self.driver, chunkName: "baton players"), arguments: [JSON.object(options).serialized()],
            options: runOptions, modules: BatonModules.standard(network: network), on: group.next()
        ).wait()
        CommandBroker.finish()
        if case .invalidScript(let message) = outcome { FailureReport.write(message: message, format: format) }
        Baton.exitProcess(outcome.exitCode)
    }

    /// `message` without the driver's `baton players:N: ` before it.
    static func withoutPlace(_ message: String) -> String {
        let prefix = "baton players:"
        guard message.hasPrefix(prefix), let end = message.range(of: ": ", range: message.index(message.startIndex, offsetBy: prefix.count)..<message.endIndex) else {
            return message
        }
        return String(message[end.upperBound...])
    }

    /// Lua/players-driver.lua, embedded in the binary (`.embedInCode`).
    static let driver = String(decoding: PackageResources.players_driver_lua, as: UTF8.self)
}
