import BatonCore
import CLuaShim

/// One call of a host function: its arguments on `lua`'s stack, and the runtime it belongs to.
/// Argument readers throw Lua's own argument errors.
public struct HostCall {
    /// The calling thread's stack; arguments are at 1...`argumentCount`.
    public let lua: LuaState
    /// The runtime that owns the state.
    public let runtime: LuaRuntime
    /// The function's name as scripts call it, for messages (`baton.sleep`).
    public let name: String
    /// What a trace records of the call.
    let traced: TracedCallKind

    /// How many arguments the script passed.
    public var argumentCount: Int32 { lua.top }

    /// A argument error for argument `position`.
    public func argumentError(_ position: Int32, _ detail: String) -> HostError {
        .argument(Int(position), name, detail)
    }

    private func typeError(_ position: Int32, expected: String) -> HostError {
        argumentError(position, "\(expected) expected, got \(lua.type(at: position) == .none ? "no value" : lua.typeName(at: position))")
    }

    /// A number argument.
    public func number(_ position: Int32) throws -> Double {
        guard lua.type(at: position) == .number, let n = lua.toNumber(at: position) else {
            throw typeError(position, expected: "number")
        }
        return n
    }

    /// A number of seconds: finite and not negative.
    public func seconds(_ position: Int32) throws -> Double {
        let n = try number(position)
        guard n.isFinite, n >= 0 else {
            throw argumentError(position, "seconds must be a finite number >= 0, got \(lua.describe(at: position))")
        }
        return n
    }

    /// An integer argument (a float with an exact integer value is accepted, as Lua does).
    public func integer(_ position: Int32) throws -> Int64 {
        guard lua.type(at: position) == .number else { throw typeError(position, expected: "number") }
        guard let i = lua.toInteger(at: position) else {
            throw argumentError(position, "number has no integer representation")
        }
        return i
    }

    /// A string argument (numbers are not converted).
    public func string(_ position: Int32) throws -> String {
        guard let s = lua.toString(at: position) else { throw typeError(position, expected: "string") }
        return s
    }

    /// Raw bytes of a string argument.
    public func bytes(_ position: Int32) throws -> [UInt8] {
        guard let b = lua.toBytes(at: position) else { throw typeError(position, expected: "string") }
        return b
    }

    /// Checks that the argument is a function.
    public func function(_ position: Int32) throws {
        guard lua.type(at: position) == .function else { throw typeError(position, expected: "function") }
    }

    /// Checks that the argument is a table.
    public func table(_ position: Int32) throws {
        guard lua.type(at: position) == .table else { throw typeError(position, expected: "table") }
    }

    /// Whether the argument is absent or nil.
    public func isNoneOrNil(_ position: Int32) -> Bool {
        let t = lua.type(at: position)
        return t == .none || t == .nil
    }

    /// The script location of the caller, `script.lua:12`, for reports.
    public var callerLocation: String {
        luaL_where(lua.pointer, 1)
        defer { lua.pop() }
        var s = lua.toString(at: -1) ?? ""
        if s.hasSuffix(": ") { s.removeLast(2) }
        return s.isEmpty ? "?" : s
    }
}
