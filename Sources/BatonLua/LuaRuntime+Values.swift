import BatonCore
import CLuaShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension LuaRuntime {
    /// Reads the Lua value at `index` as a message ``Value`` by DESIGN.md's table. Every
    /// value that breaks the rules throws an error naming its path from `root`
    /// (`message.items[3]: expected string like items[1], got number`).
    public func value(at index: Int32, on lua: LuaState, root: String = "message") throws(ValueError) -> Value {
        var reader = ValueReader(lua: lua, metatables: metatables, root: root)
        return try reader.read(lua.absolute(index))
    }

    /// Pushes `value` as Lua sees it: arrays are tables marked with `baton.array`. Returns
    /// false (pushing nothing) when the stack cannot hold its nesting.
    @discardableResult
    public func push(_ value: Value, on lua: LuaState) -> Bool {
        switch value {
        case .string(let s): lua.push(s)
        case .int(let i): lua.push(i)
        case .double(let d): lua.push(d)
        case .bool(let b): lua.push(b)
        case .date(let d): pushDate(d, on: lua)
        case .uuid(let u): pushUUID(u, on: lua)
        case .bytes(let b): pushBytes(b, on: lua)
        case .array(let elements):
            guard lua.checkStack(4) else { return false }
            lua.newTable(arrayCount: Int32(clamping: elements.count))
            for (i, e) in elements.enumerated() {
                guard push(e, on: lua) else { lua.pop(); return false }
                lua.rawSet(-2, index: i + 1)
            }
            lua.pushMetatable(named: ValueTypeName.array)
            lua.setMetatable(-2)
        case .dictionary(let members):
            guard lua.checkStack(4) else { return false }
            lua.newTable(recordCount: Int32(clamping: members.count))
            for (k, e) in members {
                lua.push(k)
                guard push(e, on: lua) else { lua.pop(2); return false }
                lua.rawSet(-3)
            }
        }
        return true
    }

    /// `baton.message(t)`: the checked round-trip copy of `t`.
    func installMessageFunctions(module m: Int32) {
        register("message", in: m, qualifier: "baton") { call in
            let runtime = call.runtime
            guard call.lua.type(at: 1) == .table else {
                throw call.argumentError(1, "table expected, got \(call.lua.typeName(at: 1))")
            }
            let value: Value
            do { value = try runtime.value(at: 1, on: call.lua) } catch { throw HostError.message(String(describing: error)) }
            guard case .dictionary = value else {
                throw HostError.message("message: a message is a dictionary (string keys), got an array")
            }
            guard runtime.push(value, on: call.lua) else { throw HostError.message("message: nested too deeply") }
            return .values(1)
        }
    }
}

/// Lua → ``Value``. Paths are kept as parts and rendered only for an error.
struct ValueReader {
    enum Part {
        case key(String)
        case index(Int)
    }

    let lua: LuaState
    let metatables: LuaRuntime.Metatables
    let root: String
    var parts: [Part] = []
    var visiting: [UnsafeRawPointer] = []
    static let maxDepth = 64

    init(lua: LuaState, metatables: LuaRuntime.Metatables, root: String) {
        self.lua = lua
        self.metatables = metatables
        self.root = root
    }

    var path: String {
        parts.reduce(root) { p, part in
            switch part {
            case .key(let k): ValuePath.member(p, k)
            case .index(let i): ValuePath.element(p, i)
            }
        }
    }

    func error(_ reason: String) -> ValueError { ValueError(path: path, reason: reason) }

    /// The kind's name in a script author's words.
    static func kindName(_ v: Value) -> String {
        switch v {
        case .string: "string"
        case .int, .double: "number"
        case .bool: "boolean"
        case .date: "date"
        case .uuid: "uuid"
        case .bytes: "bytes"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }

    mutating func read(_ idx: Int32) throws(ValueError) -> Value {
        switch lua.type(at: idx) {
        case .string:
            return .string(lua.toString(at: idx)!)
        case .number:
            if lua.isInteger(at: idx) { return .int(lua.toInteger(at: idx)!) }
            return .double(lua.toNumber(at: idx)!)
        case .boolean:
            return .bool(lua.toBool(at: idx))
        case .table:
            return try readTable(idx)
        case .userdata:
            guard lua_getmetatable(lua.pointer, idx) != 0 else { throw error("cannot send a userdata") }
            let mt = lua.toPointer(at: -1)
            lua.pop()
            let p = lua.toUserdata(at: idx)!
            if mt == metatables.date { return .date(Date(timeIntervalSince1970: p.load(as: Double.self))) }
            if mt == metatables.uuid { return .uuid(LuaRuntime.uuid(at: p)) }
            if mt == metatables.bytes {
                LuaRuntime.pushBytesString(lua, at: idx)
                defer { lua.pop() }
                return .bytes(lua.toBytes(at: -1) ?? [])
            }
            throw error("cannot send a \(lua.typeName(at: idx))")
        case .nil, .none:
            throw error("cannot send nil")
        default:
            throw error("cannot send a \(lua.typeName(at: idx))")
        }
    }

    private mutating func readTable(_ t: Int32) throws(ValueError) -> Value {
        let ptr = lua.toPointer(at: t)!
        if visiting.contains(ptr) { throw error("cycle: the table contains itself") }
        if visiting.count >= Self.maxDepth { throw error("nested deeper than \(Self.maxDepth) levels") }
        guard lua.checkStack(6) else { throw error("nested too deeply") }
        visiting.append(ptr)
        defer { visiting.removeLast() }

        var marked = false
        if lua_getmetatable(lua.pointer, t) != 0 {
            marked = lua.toPointer(at: -1) == metatables.array
            lua.pop()
        }
        // Fast path for the common dictionary: iterate once, reading values as we go.
        if !marked {
            lua.pushNil()
            if !lua.next(t) { return .dictionary([:]) }
            if lua.type(at: -2) == .string {
                var members: [String: Value] = [:]
                repeat {
                    guard lua.type(at: -2) == .string else {
                        lua.pop(2)
                        return try readShapeFailure(t, marked: false)
                    }
                    let key = lua.toString(at: -2)!
                    parts.append(.key(key))
                    let v = try read(lua.top)
                    parts.removeLast()
                    members[key] = v
                    lua.pop()
                } while lua.next(t)
                return .dictionary(members)
            }
            lua.pop(2)
        }
        switch lua.tableShape(at: t, markedArray: marked) {
        case .failure(let shape):
            throw error(shape.reason)
        case .success(.dictionary):
            return .dictionary([:])
        case .success(.array(let count)):
            return try readArray(t, count: count)
        }
    }

    private func readShapeFailure(_ t: Int32, marked: Bool) throws(ValueError) -> Value {
        if case .failure(let shape) = lua.tableShape(at: t, markedArray: marked) { throw error(shape.reason) }
        throw error("not a message table")
    }

    private mutating func readArray(_ t: Int32, count: Int) throws(ValueError) -> Value {
        var elements: [Value] = []
        elements.reserveCapacity(count)
        var sawInt = false, sawDouble = false
        for i in stride(from: 1, through: count, by: 1) {
            _ = lua.rawGet(t, index: i)
            parts.append(.index(i))
            let v = try read(lua.top)
            if let first = elements.first, Self.kindName(first) != Self.kindName(v) {
                let like = ValuePath.lastComponent(ValuePath.element(pathWithoutLast, 1))
                let e = error("expected \(Self.kindName(first)) like \(like), got \(Self.kindName(v))")
                throw e
            }
            parts.removeLast()
            lua.pop()
            if case .int = v { sawInt = true } else if case .double = v { sawDouble = true }
            elements.append(v)
        }
        // 1 and 2.5 in one array are both numbers: the array is of doubles.
        if sawInt && sawDouble {
            elements = elements.map { if case .int(let i) = $0 { .double(Double(i)) } else { $0 } }
        }
        return .array(elements)
    }

    private var pathWithoutLast: String {
        var copy = self
        copy.parts.removeLast()
        return copy.path
    }
}
