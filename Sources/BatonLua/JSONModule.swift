import BatonCore
import CLuaShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `baton.json`: `encode`, `decode` and `null`. Owns `null`, the one value that stands for
/// JSON's null in Lua (it prints as "null"; messages refuse it).
public final class JSONModule: LuaModule, @unchecked Sendable {
    /// The metatable of `baton.json.null`, to recognise it.
    private var nullMetatable: UnsafeRawPointer?
    /// Registry reference of `baton.json.null`.
    private var nullRef: Int32 = 0

    /// A module for one run.
    public init() {}

    /// Adds `baton.json` and makes `null`.
    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        let lua = runtime.state
        lua.newTable()
        let json = lua.top

        // null: a unique userdata that prints as "null".
        _ = baton_newuserdata(lua.pointer, 0, 0)
        luaL_newmetatable(lua.pointer, Self.nullName)
        nullMetatable = lua.toPointer(at: -1)
        lua.push("__tostring")
        runtime.pushFunction(named: "json.null.__tostring") { call in
            call.lua.push("null")
            return .values(1)
        }
        lua.rawSet(-3)
        lua.setMetatable(-2)
        lua.pushValue(at: -1)
        nullRef = lua.ref()
        lua.rawSet(json, field: "null")

        runtime.register("encode", in: json, qualifier: "baton.json") { [self] call in
            let lua = call.lua
            var pretty = false
            if lua.type(at: 2) == .table {
                lua.rawGet(2, field: "pretty")
                pretty = lua.toBool(at: -1)
                lua.pop()
            } else if !call.isNoneOrNil(2) {
                throw call.argumentError(2, "options table expected, got \(lua.typeName(at: 2))")
            }
            if lua.type(at: 1) == .none { throw call.argumentError(1, "value expected") }
            var reader = JSONReader(lua: lua, metatables: call.runtime.metatables, null: nullMetatable)
            let document: JSON
            do { document = try reader.read(1) } catch {
                throw HostError.message("baton.json.encode: \(String(describing: error))")
            }
            lua.push(document.serialized(pretty: pretty, sortKeys: true))
            return .values(1)
        }

        runtime.register("decode", in: json, qualifier: "baton.json") { [self] call in
            let lua = call.lua
            guard lua.type(at: 1) == .string else {
                throw call.argumentError(1, "string expected, got \(lua.typeName(at: 1))")
            }
            var len = 0
            let p = baton_tostring(lua.pointer, 1, &len)!
            let document: JSON
            do {
                document = try JSON.parse(UnsafeRawBufferPointer(start: p, count: len))
            } catch {
                throw HostError.message("baton.json.decode: \(String(describing: error))")
            }
            guard push(document, on: lua, runtime: call.runtime) else {
                throw HostError.message("baton.json.decode: nested too deeply")
            }
            return .values(1)
        }
        lua.rawSet(m, field: "json")
    }

    /// The metatable name of `baton.json.null`, as `typeName(at:)` shows it.
    static let nullName = "baton.json.null"

    /// Pushes a JSON document: objects as tables, arrays as `baton.array` tables, null as
    /// `baton.json.null`. False (nothing pushed) when the nesting is too deep for the stack.
    func push(_ document: JSON, on lua: LuaState, runtime: LuaRuntime) -> Bool {
        switch document {
        case .null: lua.pushRef(nullRef)
        case .bool(let b): lua.push(b)
        case .int(let i): lua.push(i)
        case .double(let d): lua.push(d)
        case .string(let s): lua.push(s)
        case .array(let elements):
            guard lua.checkStack(4) else { return false }
            lua.newTable(arrayCount: Int32(clamping: elements.count))
            for (i, e) in elements.enumerated() {
                guard push(e, on: lua, runtime: runtime) else { lua.pop(); return false }
                lua.rawSet(-2, index: i + 1)
            }
            lua.pushRef(runtime.metatables.arrayRef)
            lua.setMetatable(-2)
        case .object(let members):
            guard lua.checkStack(4) else { return false }
            lua.newTable(recordCount: Int32(clamping: members.count))
            for member in members {
                lua.push(member.key)
                guard push(member.value, on: lua, runtime: runtime) else { lua.pop(2); return false }
                lua.rawSet(-3)
            }
        }
        return true
    }
}

/// Lua → ``JSON``: like ``ValueReader`` but arrays may mix kinds, `baton.json.null` is null,
/// and NaN or infinities are refused (JSON cannot write them).
struct JSONReader {
    let lua: LuaState
    let metatables: LuaRuntime.Metatables
    /// The metatable of `baton.json.null`.
    let null: UnsafeRawPointer?
    var path = "value"
    var nesting = TableNesting(maxDepth: 256)

    init(lua: LuaState, metatables: LuaRuntime.Metatables, null: UnsafeRawPointer?) {
        self.lua = lua
        self.metatables = metatables
        self.null = null
    }

    func error(_ reason: String) -> ValueError { ValueError(path: path, reason: reason) }

    mutating func read(_ idx: Int32) throws(ValueError) -> JSON {
        let idx = lua.absolute(idx)
        switch lua.type(at: idx) {
        case .string:
            guard let s = lua.toValidString(at: idx) else {
                throw error("string is not valid UTF-8 (encode binary data with baton.bytes: it becomes base64)")
            }
            return .string(s)
        case .number:
            if lua.isInteger(at: idx) { return .int(lua.toInteger(at: idx)!) }
            let d = lua.toNumber(at: idx)!
            if d.isNaN { throw error("NaN cannot be written as JSON") }
            if d.isInfinite { throw error("infinity cannot be written as JSON") }
            return .double(d)
        case .boolean:
            return .bool(lua.toBool(at: idx))
        case .table:
            return try readTable(idx)
        case .userdata:
            if isNull(idx) { return .null }
            switch metatables.userdata(at: idx, on: lua) {
            case .date(let d): return .string(ISO8601.format(d))
            case .uuid(let u): return .string(u.uuidString.lowercased())
            case .bytes(let b): return .string(Base64.encode(b))
            case nil: throw error("cannot encode a \(lua.typeName(at: idx))")
            }
        case .nil, .none:
            return .null
        default:
            throw error("cannot encode a \(lua.typeName(at: idx))")
        }
    }

    private func isNull(_ idx: Int32) -> Bool {
        guard null != nil, lua_getmetatable(lua.pointer, idx) != 0 else { return false }
        defer { lua.pop() }
        return lua.toPointer(at: -1) == null
    }

    private mutating func readTable(_ t: Int32) throws(ValueError) -> JSON {
        if let reason = nesting.enter(t, on: lua) { throw error(reason) }
        defer { nesting.leave() }
        let marked = metatables.isMarkedArray(t, on: lua)
        let base = path
        defer { path = base }
        switch lua.tableShape(at: t, markedArray: marked) {
        case .failure(let shape):
            throw error(shape.reason)
        case .success(.array(let count)):
            var elements: [JSON] = []
            elements.reserveCapacity(count)
            for i in stride(from: 1, through: count, by: 1) {
                _ = lua.rawGet(t, index: i)
                path = ValuePath.element(base, i)
                elements.append(try read(lua.top))
                lua.pop()
            }
            return .array(elements)
        case .success(.dictionary):
            var members: [JSON.Member] = []
            lua.pushNil()
            while lua.next(t) {
                let key = lua.toString(at: -2)!
                path = ValuePath.member(base, key)
                members.append(JSON.Member(key, try read(lua.top)))
                lua.pop()
            }
            return .object(members)
        }
    }
}
