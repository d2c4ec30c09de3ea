import ArgumentParser
import BatonClient
import BatonCore

/// `baton describe`: who a device is and which apps it hosts.
struct DescribeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Show a device and the apps it hosts.",
        discussion: """
            Prints the device (name, kind, platform, id, model, manufacturer) and each app: \
            its id and name, the URI schemes it can be launched with, the services it \
            provides, its attributes, and whether callers from other accounts may reach it \
            (anonymous). With --json, one object: {"address": "host:port", "device": \
            {id, name, kind, platform, model, manufacturer}, "apps": [{id, name, schemes, \
            services, attributes, anonymous}, ...]}.

            Examples:
              baton describe 192.168.1.20:47300
              baton describe tv.lan:47300 --json

            Exit codes: 0 success; 2 usage; 3 no answer within --timeout; 68 no such device \
            (by name or id); 69 the device could not be reached (remote_system_unavailable, \
            after --connect-timeout at most); 77 denied (a device of another account, \
            revoked). With --json, a failure is one object too: {"status", "cause", "class", \
            "exit_code", "detail", "address"}.
            """
    )

    @Argument(help: DeviceArgument.help)
    var device: String

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var client: ClientOptions

    @OptionGroup var request: RequestTimeoutOption

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        _ = try DeviceArgument.parse(device)
    }

    func run() throws {
        logging.bootstrap()
        broker.resolve(logging)
        let baton = client.makeClient(logging)
        let output = FailureOutput(json: json, logging: logging)
        let address = try output.catching(client: baton) {
            try DeviceArgument.resolve(device, client: baton, discovery: discovery, authorization: client.authorizationKind, timeout: client.timeout)
        }
        let result = baton.describe(address, timeout: request.timeout)
        let info: DeviceInfo
        let apps: [AppInfo]
        do {
            (info, apps) = try result.wait()
        } catch let error as BatonClientError {
            let status = error.cause == .timedOut ? "timeout" : BatonClient.launchStatus(error.cause).rawValue
            output.exit(CommandFailure(status: status, cause: error.cause, detail: error.detail,
                                       fields: [JSON.Member("address", .string(address.description))]), client: baton)
        }
        baton.finish()
        print(json ? Self.json(info, apps, address: address) : Self.text(info, apps))
        Baton.exitProcess(0)
    }

    static func text(_ device: DeviceInfo, _ apps: [AppInfo]) -> String {
        var lines = [
            "name: \(device.name)",
            "kind: \(device.kind.rawValue)",
            "platform: \(device.platform.rawValue)",
            "id: \(device.id)",
        ]
        if !device.model.isEmpty { lines.append("model: \(device.model)") }
        if !device.manufacturer.isEmpty { lines.append("manufacturer: \(device.manufacturer)") }
        if apps.isEmpty {
            lines.append("apps: none")
        } else {
            lines.append("apps:")
            for app in apps {
                lines.append(app.name == app.id || app.name.isEmpty ? "  \(app.id)" : "  \(app.id) (\(app.name))")
                if !app.schemes.isEmpty { lines.append("    schemes: \(app.schemes.joined(separator: ", "))") }
                if !app.services.isEmpty { lines.append("    services: \(app.services.joined(separator: ", "))") }
                if !app.attributes.isEmpty { lines.append("    attributes: \(MessageText.line(.dictionary(app.attributes)))") }
                lines.append("    anonymous: \(app.anonymous ? "yes" : "no")")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ device: DeviceInfo, _ apps: [AppInfo], address: DeviceTarget) -> String {
        let strings: ([String]) -> JSON = { .array($0.map(JSON.string)) }
        let object = JSON.object([
            .init("address", .string(address.description)),
            .init("device", .object([
                .init("id", .string(device.id)),
                .init("name", .string(device.name)),
                .init("kind", .string(device.kind.rawValue)),
                .init("platform", .string(device.platform.rawValue)),
                .init("model", .string(device.model)),
                .init("manufacturer", .string(device.manufacturer)),
            ])),
            .init("apps", .array(apps.map { app in
                .object([
                    .init("id", .string(app.id)),
                    .init("name", .string(app.name)),
                    .init("schemes", strings(app.schemes)),
                    .init("services", strings(app.services)),
                    // NaN and infinities have no JSON form: such attributes print as null.
                    .init("attributes", (try? Value.dictionary(app.attributes).json()) ?? .null),
                    .init("anonymous", .bool(app.anonymous)),
                ])
            })),
        ])
        return object.serialized()
    }
}
