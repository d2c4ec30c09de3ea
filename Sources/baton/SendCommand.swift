import ArgumentParser
import BatonClient
import BatonCore

/// `baton send`: one request to an app service, and its reply.
struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send one message to an app service on a device and print the reply.",
        discussion: """
            Opens a channel to SERVICE of the app --app, sends the message, prints the reply \
            and closes the channel.

            The message is either KEY=VALUE words or one JSON object given with --json. A \
            KEY=VALUE value is an integer when it is one (42, -7), a boolean for true and \
            false, a double when it is a decimal number (1.5, -0.25, 2.0e3), and a string \
            otherwise; use --json for anything else (a string "42", arrays, nested objects).

            The reply prints as key: value lines sorted by key, strings as they are and \
            other values as compact JSON (dates in ISO 8601, UUIDs in lower case, bytes in \
            base64); --json-output prints it as one JSON object instead. A reply that is not \
            success prints its status and why to standard error: "failure: the provider \
            broke"; so does a baton.playback reply whose error says the player did not do \
            as asked ("bad_request: volume: level must be from 0 to 100, got 300"). With \
            --json-output a failure is one JSON object on standard output too: {"status", \
            "cause", "class", "exit_code", "detail"}.

            Examples:
              baton send tv.lan:47300 com.example.playback --app org.example.player \\
                Type=seek position=83.5 paused=true
              baton send tv.lan:47300 com.example.playback --app org.example.player \\
                --json '{"Type": "queue", "ids": [1, 2]}' --json-output

            An unreachable device is remote_system_unavailable; a channel that could not be \
            opened is failure, with why (the channel did not open: app_not_installed), and \
            exits as that would (69).

            \(ExitCodes.help)
            """
    )

    @Argument(help: DeviceArgument.help)
    var device: String

    @Argument(help: ArgumentHelp("The app service's name, e.g. com.example.playback.", valueName: "service"))
    var service: String

    @Argument(help: ArgumentHelp("The message as KEY=VALUE words.", valueName: "key=value"))
    var fields: [String] = []

    @Option(help: ArgumentHelp("The app that provides the service (its reverse-DNS id).", valueName: "id"))
    var app: String

    @Option(name: .customLong("json"), help: ArgumentHelp("The message as one JSON object, instead of KEY=VALUE words.", valueName: "object"))
    var jsonMessage: String?

    @Flag(name: .customLong("json-output"), help: "Print the reply as one JSON object.")
    var jsonOutput = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var client: ClientOptions

    @OptionGroup var request: RequestTimeoutOption

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        _ = try DeviceArgument.parse(device)
        _ = try message()
    }

    /// The message to send, from --json or the KEY=VALUE words.
    func message() throws -> ValueDictionary {
        if let jsonMessage {
            guard fields.isEmpty else {
                throw ValidationError("Give the message as KEY=VALUE words or as --json, not both.")
            }
            return try MessageText.dictionary(fromJSON: jsonMessage, option: "--json", root: "message")
        }
        var message = ValueDictionary(minimumCapacity: fields.count)
        for field in fields {
            guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                throw ValidationError("Invalid message field '\(field)': use KEY=VALUE, e.g. Type=ping.")
            }
            let key = String(field[..<equals])
            guard message[key] == nil else { throw ValidationError("Message key '\(key)' is given twice.") }
            message[key] = Self.value(String(field[field.index(after: equals)...]))
        }
        return message
    }

    /// A KEY=VALUE value: integer, boolean, decimal number, else string.
    static func value(_ text: String) -> Value {
        if let int = Int64(text), text.first != "+" { return .int(int) }
        if text == "true" { return .bool(true) }
        if text == "false" { return .bool(false) }
        if text.wholeMatch(of: /-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))([eE][-+]?[0-9]+)?/) != nil,
           let double = Double(text), double.isFinite
        {
            return .double(double)
        }
        return .string(text)
    }

    func run() throws {
        let message = try message()
        logging.bootstrap()
        broker.resolve(logging)
        let baton = client.makeClient(logging)
        let output = FailureOutput(json: jsonOutput, logging: logging)
        let address = try output.catching(client: baton) {
            try DeviceArgument.resolve(device, client: baton, discovery: discovery, authorization: client.authorizationKind, timeout: client.timeout)
        }
        let reply = try baton.send(message, to: service, app: app, on: address, timeout: request.timeout).wait()
        baton.finish()
        if let failure = Self.failure(reply, service: service) { output.exit(failure) }
        let answer = reply.message ?? [:]
        if jsonOutput {
            do {
                print(try MessageText.json(answer, path: "reply"))
            } catch {
                StandardError.write("the reply cannot be written as JSON: \(error)\n")
                Baton.exitProcess(1)
            }
        } else {
            for (key, value) in answer.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                print("\(key): \(MessageText.line(value))")
            }
        }
        Baton.exitProcess(0)
    }

    /// How `reply` failed, if it did: a status other than `success`, or a `baton.playback`
    /// reply whose `error` says the player did not do as asked (`bad_request`,
    /// `player_failed`, ...), which the service answers with `success`.
    static func failure(_ reply: ServiceReply, service: String) -> CommandFailure? {
        if let cause = reply.failureCause {
            return CommandFailure(status: reply.status.rawValue, cause: cause, detail: reply.detail)
        }
        guard service == PlaybackCommand.service, let message = reply.message, let failure = PlaybackFailure(message: message) else {
            return nil
        }
        let answer = (try? Value.dictionary(message).json()) ?? .null
        return CommandFailure(status: failure.code, cause: FailureCause(failure), detail: failure.description, fields: [JSON.Member("reply", answer)])
    }
}
