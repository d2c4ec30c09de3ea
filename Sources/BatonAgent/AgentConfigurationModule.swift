import BatonCore
import BatonLua

/// The agent's configuration functions, as globals: `device{}`, `handler{}` and `app{}`. The
/// agent adds this module to the standard ones; it collects what the configuration declares
/// into ``configuration``. Confined to the runtime's loop.
public final class AgentConfigurationModule: LuaModule, @unchecked Sendable {
    /// What the configuration declared so far, over the defaults.
    public private(set) var configuration: AgentConfiguration
    /// Where `device{}` was called, once it was: a second call is a mistake, not an override.
    private var deviceGiven: String?

    /// A module for one run, starting from `defaults`.
    public init(defaults: AgentConfiguration) { configuration = defaults }

    /// Registers the three configuration functions as globals.
    public func install(in runtime: LuaRuntime, table: Int32) throws {
        runtime.registerGlobal("device") { [self] call in
            let fields = try Self.fields(call, function: "device", allowed: ["id", "name", "kind", "model", "manufacturer"])
            if let first = deviceGiven {
                throw HostError.message("device: given twice (first at \(first)); one device{ ... } describes the device")
            }
            deviceGiven = call.callerLocation
            var device = configuration.device
            if let id = try fields.string("id") { device.id = id }
            if let name = try fields.string("name") { device.name = name }
            if let kind = try fields.string("kind") {
                guard let k = DeviceKind(rawValue: kind) else {
                    throw HostError.message("device: kind must be one of \(DeviceKind.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(kind)\"")
                }
                device.kind = k
            }
            if let model = try fields.string("model") { device.model = model }
            if let manufacturer = try fields.string("manufacturer") { device.manufacturer = manufacturer }
            guard !device.name.isEmpty else { throw HostError.message("device: name must not be empty") }
            configuration.device = device
            return .values(0)
        }

        runtime.registerGlobal("handler") { [self] call in
            let fields = try Self.fields(call, function: "handler", allowed: ["scheme", "run"])
            guard let scheme = try fields.string("scheme")?.lowercased(), LaunchRequest.scheme(of: scheme + ":") == scheme else {
                throw HostError.message("handler: scheme must be a URI scheme such as \"https\"")
            }
            guard let run = try fields.strings("run") else { throw HostError.message("handler: run = {argv...} is required") }
            let command: ArgvTemplate
            do { command = try ArgvTemplate(run) } catch { throw HostError.message("handler: \(error)") }
            configuration.handlers[scheme] = .init(scheme: scheme, command: command)
            return .values(0)
        }

        runtime.registerGlobal("app") { [self] call in
            let fields = try Self.fields(
                call, function: "app",
                allowed: ["id", "name", "schemes", "launch", "run", "services", "attributes", "anonymous", "player"])
            guard let id = try fields.string("id"), !id.isEmpty else { throw HostError.message("app: id is required") }
            guard configuration.app(id) == nil else { throw HostError.message("app: \(id) is already defined") }
            let name = try fields.string("name") ?? id
            let schemes = try (fields.strings("schemes") ?? []).map { $0.lowercased() }
            let playerFields = try fields.message("player")
            let player = try playerFields.map { try PlayerConfiguration(fields: $0, app: id) }
            let playerOnStop = try playerFields.map { try PlayerConfiguration.stopAction(fields: $0, app: id) } ?? .leave
            let launch: AgentConfiguration.LaunchAction
            switch (try fields.function("launch"), try fields.strings("run")) {
            case (.some, .some):
                throw HostError.message("app \(id): give launch = function or run = {argv...}, not both")
            case (.some(let fn), nil):
                launch = .lua(fn)
            case (nil, .some(let argv)):
                do { launch = .command(try ArgvTemplate(argv)) } catch { throw HostError.message("app \(id): \(error)") }
            case (nil, nil) where player != nil:
                launch = .player
            case (nil, nil):
                guard schemes.isEmpty else {
                    throw HostError.message("app \(id): it takes schemes, so it needs launch = function or run = {argv...}")
                }
                launch = .none
            }
            let services = try fields.functions("services", keys: "service names") ?? [:]
            if player != nil, services[PlaybackCommand.service] != nil {
                throw HostError.message("app \(id): its player answers \(PlaybackCommand.service); give a player or a provider of it, not both")
            }
            let attributes = try fields.message("attributes") ?? [:]
            let anonymous = try fields.bool("anonymous") ?? false
            let info = AppInfo(
                id: id, name: name, schemes: schemes, services: (services.keys + (player != nil ? [PlaybackCommand.service] : [])).sorted(),
                attributes: attributes, anonymous: anonymous)
            configuration.apps.append(.init(info: info, launch: launch, services: services, player: player, playerOnStop: playerOnStop))
            return .values(0)
        }
    }

    /// The table argument of a configuration function: a table whose fields are all `allowed`.
    private static func fields(_ call: HostCall, function: String, allowed: Set<String>) throws -> OptionTable {
        guard call.lua.type(at: 1) == .table else {
            throw HostError.message("\(function): expected a table, as in \(function){ ... }, got \(call.lua.typeName(at: 1))")
        }
        let fields = OptionTable(call, at: 1, function: function, noun: "field")
        try fields.check(allowed: allowed)
        return fields
    }
}
