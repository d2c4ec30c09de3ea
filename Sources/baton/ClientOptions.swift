import ArgumentParser
import BatonClient
import BatonCore
import BatonNet
import NIOCore
import NIOPosix

/// The option every command that talks to a device shares: how long to wait for it.
struct ClientOptions: ParsableArguments {
    @Option(
        name: .customLong("connect-timeout"),
        help: ArgumentHelp(
            "How long connecting and the handshake may take; an unreachable device answers remote_system_unavailable after it: 500ms, 3s, 1m.",
            valueName: "duration"))
    var connectTimeout: String = "3s"

    @Option(help: ArgumentHelp(
        "same_account (the default): devices of this device's account only; anonymous: devices of other accounts too, which serve callers like this one only their apps marked anonymous.",
        valueName: "kind"))
    var authorization = "same_account"

    @Flag(help: ArgumentHelp(ConnectionSecurity.insecureHelp))
    var insecure = false

    /// `--authorization`, validated.
    var authorizationKind: AuthorizationKind { AuthorizationKind(rawValue: authorization) ?? .sameAccount }

    func validate() throws {
        guard AuthorizationKind(rawValue: authorization) != nil else {
            throw ValidationError("Invalid --authorization '\(authorization)': use same_account or anonymous.")
        }
        guard let duration = DurationText.parse(connectTimeout), duration > .zero, duration <= .seconds(3600) else {
            throw ValidationError("Invalid --connect-timeout '\(connectTimeout)': use a duration above zero and up to 1h, like 500ms, 3s or 1m.")
        }
    }

    /// `--connect-timeout` as NIO counts time (validated: at most an hour).
    var timeout: TimeAmount {
        TimeAmount(DurationText.parse(connectTimeout) ?? .seconds(3))
    }

    /// A client on a loop of its own, with this device's account (mutual TLS) unless
    /// `--insecure`; exits 1 saying why when the account cannot be read. Call once, from
    /// `run()`, after bootstrapping the logs.
    func makeClient(_ logging: LoggingOptions) -> BatonClient {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var options = BatonClient.Options()
        options.connectTimeout = timeout
        options.security = AccountCommand.attempt(logging) { try ConnectionSecurity.forCommandLine(insecure: insecure) }
        if authorizationKind == .anonymous { options.unlistedAgents = .anyAccount }
        // The agents log under the caller's trace (a TRACEPARENT in the environment).
        options.traceparent = TraceOptions.context().traceparent
        let loop = group.next()
        CommandBroker.dialing(&options, on: loop)
        return BatonClient(eventLoop: loop, options: options)
    }
}

/// Reading the DEVICE argument: `host:port`, or a device's name or id found by discovery.
enum DeviceArgument {
    static let help = ArgumentHelp(
        "The device: its name (any case) or id (found where it was last reached, by discovery and --peer), or its agent as host:port, e.g. 192.168.1.20:47300 or [fe80::1]:47300.",
        valueName: "device")

    /// The address `text` names when it is `host:port`, nil for a name or id; a usage error
    /// for something that tries to be `host:port` and is not.
    static func parse(_ text: String) throws -> DeviceAddress? {
        if let address = DeviceAddress(text) { return address }
        let afterColon = text.split(separator: ":", omittingEmptySubsequences: false).last ?? ""
        guard !text.isEmpty, !(text.contains(":") && afterColon.allSatisfy(\.isNumber)) else {
            throw ValidationError(
                "Invalid device '\(text)': give a device name or id (see baton devices), or the agent's address as "
                    + "host:port with a port from 1 to 65535, e.g. 127.0.0.1:47300.")
        }
        return nil
    }

    /// The device `text` names: an agent's `host:port`, or a name (any case) or id looked up
    /// through discovery and the routes where devices were last reached (then reached by its id
    /// and every route known); throws a ``CommandFailure`` when no single device answers to it:
    /// `not_found` (68) for a name nobody knows (with the closest known names) or several
    /// devices share, `remote_system_unavailable` (69) for a known device that answers nowhere.
    static func resolve(
        _ text: String, client: BatonClient, discovery: DiscoveryOptions, authorization: AuthorizationKind, timeout: TimeAmount
    ) throws -> DeviceTarget {
        if let address = try parse(text) { return DeviceTarget(address) }
        let directory = try discovery.makeDirectory(client: client)
        let lookup = try client.eventLoop.flatSubmit {
            directory.find(text, among: DeviceFilter(authorization: authorization), timeout: timeout).map { lookup in
                if case .found(let device) = lookup { return (lookup, Optional(directory.target(for: device))) }
                return (lookup, nil)
            }.always { _ in directory.stop() }
        }.wait()
        let problem: DeviceLookupError
        switch lookup {
        case (.found, let target?) where !target.routes.isEmpty: return target
        case (.found, _): problem = .notFound(text, suggestions: [])
        case (let failed, _): problem = failed.failure(for: text) ?? .notFound(text, suggestions: [])
        }
        throw problem.failure
    }
}

extension DeviceLookupError {
    /// The failure a command ends with: its status, its cause and why.
    var failure: CommandFailure {
        var detail = message
        if case .notFound = self { detail += " (see baton devices; --peer HOST:PORT for networks without multicast)" }
        return CommandFailure(status: status, cause: cause, detail: detail)
    }
}

extension BatonClient {
    /// Says goodbye on every connection and lets the loop write it before the process ends.
    func finish() {
        shutdown()
        CommandBroker.finish()
        try? eventLoop.submit {}.wait()
    }
}

/// Turning JSON given on the command line into message values, and message values into text.
enum MessageText {
    /// The dictionary a JSON object describes. `option` names the option in errors (`--data`),
    /// `root` the message in paths (`data.items[2]`).
    ///
    /// Strings, integers, numbers, booleans, arrays and objects map to their value kinds; an
    /// array of numbers that mixes integers and fractions becomes all doubles. `null`, and
    /// arrays whose elements are of different kinds, have no message form: usage errors that
    /// say where.
    static func dictionary(fromJSON text: String, option: String, root: String) throws -> ValueDictionary {
        let json: JSON
        do {
            json = try JSON.parse(text)
        } catch {
            throw ValidationError("Invalid \(option): not JSON: \(error).")
        }
        guard case .object = json else {
            throw ValidationError("Invalid \(option): expected a JSON object like '{\"key\": \"value\"}'.")
        }
        let value: Value
        do {
            value = try Value(json: json, path: root)
        } catch {
            throw ValidationError("Invalid \(option): \(error).")
        }
        guard case .dictionary(let dictionary) = value else { preconditionFailure("an object converts to a dictionary") }
        return dictionary
    }

    /// `value` for a `key: value` line: strings as they are, anything else as compact JSON
    /// (dates in ISO 8601, UUIDs in lower case, bytes in base64).
    static func line(_ value: Value) -> String {
        guard let json = try? value.json() else { return "\(value)" }
        if case .string(let s) = json { return s }
        return json.serialized(sortKeys: true)
    }

    /// One compact JSON object for `dictionary`; NaN and infinities (which JSON cannot hold)
    /// are a failure naming where they are.
    static func json(_ dictionary: ValueDictionary, path: String) throws(ValueError) -> String {
        try Value.dictionary(dictionary).json(path: path).serialized(sortKeys: true)
    }
}

/// `--timeout` of the commands that ask a device something: how long to wait for the answer.
struct RequestTimeoutOption: ParsableArguments {
    @Option(
        name: .customLong("timeout"),
        help: ArgumentHelp(
            "How long to wait for the answer, connecting included (the agent stops the work when it passes): 500ms, 5s, 2m.",
            valueName: "duration"))
    var text: String = "30s"

    func validate() throws {
        guard let duration = DurationText.parse(text), duration > .zero, duration <= .seconds(86_400) else {
            throw ValidationError("Invalid --timeout '\(text)': use a duration above zero and up to 24h, like 500ms, 5s or 2m.")
        }
    }

    /// `--timeout` as NIO counts time (validated).
    var timeout: TimeAmount { TimeAmount(DurationText.parse(text) ?? .seconds(30)) }
}
