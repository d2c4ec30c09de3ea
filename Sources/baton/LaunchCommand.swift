import ArgumentParser
import BatonClient
import BatonCore

/// `baton launch`: opens a URI on another device.
struct LaunchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "Launch a URI on a device.",
        discussion: """
            The device picks what opens the URI, in this order: the app given with --app (and \
            nothing else: app_unavailable if the device lacks it, protocol_unavailable if it \
            does not take the scheme); else the first --prefer app the device has that takes \
            the scheme; else the device's handler for the scheme; else any app that takes it; \
            else the --fallback URI, chosen the same way; else protocol_unavailable.

            Prints the status (success, app_unavailable, protocol_unavailable, \
            remote_system_unavailable, value_set_too_large, denied_by_local_system, \
            denied_by_remote_system or unknown) and, when it is not success, why: \
            "app_unavailable: no app org.example.player on Living Room TV". With --json, one \
            object, failures included: {"status":…,"cause":…,"class":…,"exit_code":…,\
            "detail":…,"device":"host:port","uri":…} (cause and class only when it failed).

            --data is a JSON object handed to the app with the URI. Strings, integers, \
            numbers, booleans, arrays (of one kind; integers among decimals count as \
            decimals) and objects are allowed; null is not.

            Examples:
              baton launch 192.168.1.20:47300 https://example.org/film
              baton launch tv.lan:47300 media:film/83 --app org.example.player \\
                --data '{"position": 83.5}'
              baton launch tv.lan:47300 spotify:track:1 --prefer com.spotify.client \\
                --fallback https://open.spotify.com/track/1

            An unreachable device is remote_system_unavailable, after --connect-timeout at \
            most.

            \(ExitCodes.help)
            """
    )

    @Argument(help: DeviceArgument.help)
    var device: String

    @Argument(help: ArgumentHelp("The URI to launch; its scheme picks what opens it.", valueName: "uri"))
    var uri: String

    @Option(help: ArgumentHelp("Launch with this app only (its reverse-DNS id).", valueName: "id"))
    var app: String?

    @Option(help: ArgumentHelp("Launched instead when nothing on the device takes the URI.", valueName: "uri"))
    var fallback: String?

    @Option(help: ArgumentHelp("Try this app first when it takes the scheme; repeat to give an order.", valueName: "id"))
    var prefer: [String] = []

    @Option(help: ArgumentHelp("A JSON object handed to the app with the URI.", valueName: "json"))
    var data: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var client: ClientOptions

    @OptionGroup var request: RequestTimeoutOption

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        _ = try DeviceArgument.parse(device)
        if let data { _ = try MessageText.dictionary(fromJSON: data, option: "--data", root: "data") }
    }

    func run() throws {
        let launchData = try data.map { try MessageText.dictionary(fromJSON: $0, option: "--data", root: "data") } ?? [:]
        logging.bootstrap()
        broker.resolve(logging)
        let baton = client.makeClient(logging)
        // A device that is not found says so on stderr; what the device answers prints on stdout.
        let output = FailureOutput(json: json, logging: logging, textOnStdout: true)
        let address = try FailureOutput(json: json, logging: logging).catching(client: baton) {
            try DeviceArgument.resolve(device, client: baton, discovery: discovery, authorization: client.authorizationKind, timeout: client.timeout)
        }
        let launchRequest = LaunchRequest(uri: uri, appID: app, fallbackURI: fallback, preferredAppIDs: prefer, data: launchData)
        let outcome = try baton.launchOutcome(launchRequest, on: address, timeout: self.request.timeout).wait()
        let fields = [JSON.Member("device", .string(address.description)), JSON.Member("uri", .string(uri))]
        if let cause = outcome.cause {
            output.exit(CommandFailure(status: outcome.status.rawValue, cause: cause, detail: outcome.detail, fields: fields), client: baton)
        }
        baton.finish()
        if json {
            print(JSON.object(CommandFailure.members(status: outcome.status.rawValue, cause: nil, detail: outcome.detail) + fields).serialized())
        } else {
            print(outcome.status.rawValue)
        }
        Baton.exitProcess(0)
    }
}
