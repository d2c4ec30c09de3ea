import BatonCore

/// A table argument read field by field, as `baton.launch`'s options or the agent's
/// `app{ ... }` are: unknown fields and fields of the wrong type are errors that name the
/// function and the field (`baton.launch: unknown option 'colour' (options: app, data)`,
/// `app: schemes[1] must be a string, got number`). Reads are raw: no metamethod runs. An
/// argument that is not a table reads as having no fields.
public struct OptionTable {
    /// The call whose argument it is.
    public let call: HostCall
    /// The argument's position.
    public let position: Int32
    /// How errors name the function: `baton.launch`, `app`.
    public let function: String
    /// How errors name a field: `option`, `field`.
    public let noun: String

    /// The table at argument `position` of `call`. `function` and `noun` name the function and
    /// its fields in errors.
    public init(_ call: HostCall, at position: Int32, function: String, noun: String = "option") {
        self.call = call
        self.position = position
        self.function = function
        self.noun = noun
    }

    private var lua: LuaState { call.lua }
    private var isTable: Bool { lua.type(at: position) == .table }

    /// Throws for the first key that is not one of `allowed`, listing them.
    public func check(allowed: Set<String>) throws {
        guard isTable else { return }
        lua.pushNil()
        while lua.next(position) {
            let key = lua.type(at: -2) == .string ? lua.toString(at: -2) : nil
            lua.pop()
            guard let key, allowed.contains(key) else {
                lua.pop()
                let what = key.map { "'\($0)'" } ?? "key"
                throw HostError.message("\(function): unknown \(noun) \(what) (\(noun)s: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
    }

    /// Pushes the field, runs `read` on it (on top of the stack), pops it; nil when absent.
    private func field<T>(_ name: String, _ read: (LuaState.LuaType) throws -> T?) throws -> T? {
        guard isTable else { return nil }
        let type = lua.rawGet(position, field: name)
        defer { lua.pop() }
        return type == .nil ? nil : try read(type)
    }

    private func wrongType(_ name: String, _ expected: String) -> HostError {
        .message("\(function): \(name) must be \(expected), got \(lua.typeName(at: -1))")
    }

    /// A string field (numbers are not converted).
    public func string(_ name: String) throws -> String? {
        try field(name) { type in
            guard type == .string, let s = lua.toString(at: -1) else { throw wrongType(name, "a string") }
            return s
        }
    }

    /// A boolean field.
    public func bool(_ name: String) throws -> Bool? {
        try field(name) { type in
            guard type == .boolean else { throw wrongType(name, "a boolean") }
            return lua.toBool(at: -1)
        }
    }

    /// A number field.
    public func number(_ name: String) throws -> Double? {
        try field(name) { type in
            guard type == .number, let n = lua.toNumber(at: -1) else { throw wrongType(name, "a number") }
            return n
        }
    }

    /// A list of strings.
    public func strings(_ name: String) throws -> [String]? {
        try field(name) { type in
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

    /// A string or a list of strings, as a list: `kind = "tv"` or `kind = {"tv", "speaker"}`.
    public func stringOrStrings(_ name: String) throws -> [String]? {
        if let one = try field(name, { type in type == .string ? lua.toString(at: -1) : nil }) { return [one] }
        return try strings(name)
    }

    /// A message field (a table with string keys), read by the message rules; an error names
    /// its path from the field (`baton.launch: data.items[2]: expected number like items[1], got string`).
    public func message(_ name: String) throws -> ValueDictionary? {
        try field(name) { type in
            guard type == .table else { throw wrongType(name, "a table") }
            let value: Value
            do { value = try call.runtime.value(at: -1, on: lua, root: name) } catch {
                throw HostError.message("\(function): \(error)")
            }
            guard case .dictionary(let d) = value else { throw wrongType(name, "a table with string keys") }
            return d
        }
    }

    /// A function field, kept alive for the host (release it when done).
    public func function(_ name: String) throws -> LuaReference? {
        try field(name) { type in
            guard type == .function else { throw wrongType(name, "a function") }
            return call.runtime.reference(at: -1, on: lua)
        }
    }

    /// A table of `name = function` fields, each kept alive for the host; `keys` says what the
    /// names are in errors (`service names`).
    public func functions(_ name: String, keys: String = "names") throws -> [String: LuaReference]? {
        try field(name) { type in
            guard type == .table else { throw wrongType(name, "a table of name = function") }
            let t = lua.top
            var out: [String: LuaReference] = [:]
            lua.pushNil()
            while lua.next(t) {
                guard lua.type(at: -2) == .string, let key = lua.toString(at: -2), lua.type(at: -1) == .function else {
                    let what = lua.typeName(at: -1)
                    lua.pop(2)
                    for reference in out.values { call.runtime.release(reference) }
                    throw HostError.message("\(function): \(name) must map \(keys) to functions, got a \(what)")
                }
                out[key] = call.runtime.reference(at: -1, on: lua)
                lua.pop()
            }
            return out
        }
    }
}
