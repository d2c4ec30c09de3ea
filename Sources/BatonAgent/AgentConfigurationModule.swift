import BatonCore
import BatonLua
import CLuaShim

/// Collects `device{}`, `handler{}` and `app{}` calls while an agent's configuration runs.
/// Confined to the runtime's loop.
final class ConfigurationCollector: @unchecked Sendable {
    var configuration: AgentConfiguration

    init(defaults: AgentConfiguration) { configuration = defaults }

    /// Registers the three configuration functions as globals of `runtime`.
    func install(in runtime: LuaRuntime) {
        runtime.registerGlobal("device") { [self] call in
            var fields = try ConfigTable(call, function: "device", allowed: ["id", "name", "kind", "model", "manufacturer"])
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
            var fields = try ConfigTable(call, function: "handler", allowed: ["scheme", "run"])
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
            var fields = try ConfigTable(
                call, function: "app",
                allowed: ["id", "name", "schemes", "launch", "run", "services", "attributes", "anonymous"])
            guard let id = try fields.string("id"), !id.isEmpty else { throw HostError.message("app: id is required") }
            guard configuration.app(id) == nil else { throw HostError.message("app: \(id) is already defined") }
            let name = try fields.string("name") ?? id
            let schemes = try (fields.strings("schemes") ?? []).map { $0.lowercased() }
            let launch: AgentConfiguration.LaunchAction
            switch (try fields.function("launch", runtime: call.runtime), try fields.strings("run")) {
            case (.some, .some):
                throw HostError.message("app \(id): give launch = function or run = {argv...}, not both")
            case (.some(let fn), nil):
                launch = .lua(fn)
            case (nil, .some(let argv)):
                do { launch = .command(try ArgvTemplate(argv)) } catch { throw HostError.message("app \(id): \(error)") }
            case (nil, nil):
                guard schemes.isEmpty else {
                    throw HostError.message("app \(id): it takes schemes, so it needs launch = function or run = {argv...}")
                }
                launch = .none
            }
            let services = try fields.functions("services", runtime: call.runtime) ?? [:]
            let attributes = try fields.dictionary("attributes") ?? [:]
            let anonymous = try fields.bool("anonymous") ?? false
            let info = AppInfo(
                id: id, name: name, schemes: schemes, services: services.keys.sorted(),
                attributes: attributes, anonymous: anonymous)
            configuration.apps.append(.init(info: info, launch: launch, services: services))
            return .values(0)
        }
    }
}

/// The table argument of a configuration function, read field by field; unknown fields and
/// wrong types are errors that name them.
struct ConfigTable {
    let call: HostCall
    let function: String

    init(_ call: HostCall, function: String, allowed: Set<String>) throws {
        self.call = call
        self.function = function
        let lua = call.lua
        guard lua.type(at: 1) == .table else {
            throw HostError.message("\(function): expected a table, as in \(function){ ... }, got \(lua.typeName(at: 1))")
        }
        lua.pushNil()
        while lua.next(1) {
            guard let key = lua.toString(at: -2) else {
                lua.pop(2)
                throw HostError.message("\(function): fields are named, as in \(function){ name = ... }")
            }
            guard allowed.contains(key) else {
                lua.pop(2)
                throw HostError.message("\(function): unknown field '\(key)' (fields: \(allowed.sorted().joined(separator: ", ")))")
            }
            lua.pop()
        }
    }

    /// Pushes the field, runs `read` on it, pops it.
    private func field<T>(_ name: String, _ read: (LuaState.LuaType) throws -> T?) throws -> T? {
        let lua = call.lua
        let type = lua.rawGet(1, field: name)
        defer { lua.pop() }
        if type == .nil { return nil }
        return try read(type)
    }

    private func wrongType(_ name: String, _ expected: String) -> HostError {
        .message("\(function): \(name) must be \(expected), got \(call.lua.typeName(at: -1))")
    }

    mutating func string(_ name: String) throws -> String? {
        try field(name) { type in
            guard type == .string, let s = call.lua.toString(at: -1) else { throw wrongType(name, "a string") }
            return s
        }
    }

    mutating func bool(_ name: String) throws -> Bool? {
        try field(name) { type in
            guard type == .boolean else { throw wrongType(name, "a boolean") }
            return call.lua.toBool(at: -1)
        }
    }

    mutating func strings(_ name: String) throws -> [String]? {
        try field(name) { type in
            let lua = call.lua
            guard type == .table else { throw wrongType(name, "a list of strings") }
            let t = lua.top
            let n = lua.rawLength(at: t)
            var out: [String] = []
            for i in stride(from: 1, through: n, by: 1) {
                lua.rawGet(t, index: i)
                defer { lua.pop() }
                guard let s = lua.toString(at: -1) else {
                    throw HostError.message("\(function): \(name)[\(i)] must be a string, got \(lua.typeName(at: -1))")
                }
                out.append(s)
            }
            return out
        }
    }

    mutating func function(_ name: String, runtime: LuaRuntime) throws -> LuaReference? {
        try field(name) { type in
            guard type == .function else { throw wrongType(name, "a function") }
            return runtime.reference(at: -1, on: call.lua)
        }
    }

    mutating func functions(_ name: String, runtime: LuaRuntime) throws -> [String: LuaReference]? {
        try field(name) { type in
            let lua = call.lua
            guard type == .table else { throw wrongType(name, "a table of name = function") }
            let t = lua.top
            var out: [String: LuaReference] = [:]
            lua.pushNil()
            while lua.next(t) {
                guard let key = lua.toString(at: -2), lua.type(at: -1) == .function else {
                    let what = lua.typeName(at: -1)
                    lua.pop(2)
                    throw HostError.message("\(function): \(name) must map service names to functions, got a \(what)")
                }
                out[key] = runtime.reference(at: -1, on: lua)
                lua.pop()
            }
            return out
        }
    }

    mutating func dictionary(_ name: String) throws -> ValueDictionary? {
        try field(name) { type in
            guard type == .table else { throw wrongType(name, "a table") }
            let value: Value
            do { value = try call.runtime.value(at: -1, on: call.lua, root: name) } catch {
                throw HostError.message("\(function): \(error)")
            }
            guard case .dictionary(let d) = value else { throw wrongType(name, "a table with string keys") }
            return d
        }
    }
}
