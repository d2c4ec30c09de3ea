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
        var reader = ValueReader(lua: lua, metatables: metatables)
        do {
            return try reader.read(lua.absolute(index))
        } catch {
            throw error.render(root: root)
        }
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
            lua.pushRef(metatables.arrayRef)
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
}

/// Lua → ``Value``. The happy path keeps no path at all: a failure collects its path while
/// it unwinds, and only then is it rendered.
struct ValueReader {
    enum Part {
        case key(String)
        case index(Int)
    }

    enum Reason {
        case text(String)
        case mixed(expected: String, got: String)
    }

    /// A failure on its way up; `parts` are innermost first.
    struct Failure: Error {
        var parts: [Part] = []
        var reason: Reason

        init(_ reason: String) { self.reason = .text(reason) }
        init(mixed expected: String, got: String, at index: Int) {
            reason = .mixed(expected: expected, got: got)
            parts = [.index(index)]
        }

        func within(_ part: Part) -> Failure {
            var copy = self
            copy.parts.append(part)
            return copy
        }

        func render(root: String) -> ValueError {
            func path(_ parts: ArraySlice<Part>) -> String {
                parts.reversed().reduce(root) { p, part in
                    switch part {
                    case .key(let k): ValuePath.member(p, k)
                    case .index(let i): ValuePath.element(p, i)
                    }
                }
            }
            let full = path(parts[...])
            switch reason {
            case .text(let text):
                return ValueError(path: full, reason: text)
            case .mixed(let expected, let got):
                let like = ValuePath.lastComponent(ValuePath.element(path(parts.dropFirst()), 1))
                return ValueError(path: full, reason: "expected \(expected) like \(like), got \(got)")
            }
        }
    }

    let lua: LuaState
    let metatables: LuaRuntime.Metatables
    var nesting = TableNesting(maxDepth: Value.maxDepth)

    init(lua: LuaState, metatables: LuaRuntime.Metatables) {
        self.lua = lua
        self.metatables = metatables
    }

    /// The kind's name in a script author's words.
    /// Integers and floats are both numbers here, as they are to Lua.
    static func kindName(_ v: Value) -> String {
        v.kind == .int ? Value.Kind.double.luaName : v.kind.luaName
    }

    mutating func read(_ idx: Int32) throws(Failure) -> Value {
        switch lua.type(at: idx) {
        case .string:
            guard let s = lua.toValidString(at: idx) else {
                throw Failure("string is not valid UTF-8 (use baton.bytes for binary data)")
            }
            return .string(s)
        case .number:
            if lua.isInteger(at: idx) { return .int(lua.toInteger(at: idx)!) }
            return .double(lua.toNumber(at: idx)!)
        case .boolean:
            return .bool(lua.toBool(at: idx))
        case .table:
            return try readTable(idx)
        case .userdata:
            switch metatables.userdata(at: idx, on: lua) {
            case .date(let d): return .date(d)
            case .uuid(let u): return .uuid(u)
            case .bytes(let b): return .bytes(b)
            case nil: throw Failure("cannot send a \(lua.typeName(at: idx))")
            }
        case .nil, .none:
            throw Failure("cannot send nil")
        default:
            throw Failure("cannot send a \(lua.typeName(at: idx))")
        }
    }

    private mutating func readTable(_ t: Int32) throws(Failure) -> Value {
        if let reason = nesting.enter(t, on: lua) { throw Failure(reason) }
        defer { nesting.leave() }
        let marked = metatables.isMarkedArray(t, on: lua)
        // The common dictionary: one pass, reading values as the keys come.
        if !marked {
            lua.pushNil()
            if !lua.next(t) { return .dictionary(ValueDictionary()) }
            if lua.type(at: -2) == .string {
                var members = ValueDictionary(minimumCapacity: 8)
                repeat {
                    guard lua.type(at: -2) == .string else {
                        lua.pop(2)
                        throw shapeFailure(t, marked: false)
                    }
                    let key = lua.toString(at: -2)!
                    let v: Value
                    do { v = try read(lua.top) } catch { throw error.within(.key(key)) }
                    members.appendUnchecked(key, v)
                    lua.pop()
                } while lua.next(t)
                return .dictionary(members)
            }
            lua.pop(2)
        }
        switch lua.tableShape(at: t, markedArray: marked) {
        case .failure(let shape):
            throw Failure(shape.reason)
        case .success(.dictionary):
            return .dictionary(ValueDictionary())
        case .success(.array(let count)):
            return try readArray(t, count: count)
        }
    }

    private func shapeFailure(_ t: Int32, marked: Bool) -> Failure {
        if case .failure(let shape) = lua.tableShape(at: t, markedArray: marked) { return Failure(shape.reason) }
        return Failure("not a message table")
    }

    private mutating func readArray(_ t: Int32, count: Int) throws(Failure) -> Value {
        var elements: [Value] = []
        elements.reserveCapacity(count)
        var sawInt = false, sawDouble = false
        for i in stride(from: 1, through: count, by: 1) {
            _ = lua.rawGet(t, index: i)
            let v: Value
            do { v = try read(lua.top) } catch { throw error.within(.index(i)) }
            lua.pop()
            if let first = elements.first {
                let expected = Self.kindName(first), got = Self.kindName(v)
                if expected != got { throw Failure(mixed: expected, got: got, at: i) }
            }
            if case .int = v { sawInt = true } else if case .double = v { sawDouble = true }
            elements.append(v)
        }
        // 1 and 2.5 in one array are both numbers: the array is of doubles.
        if sawInt && sawDouble {
            elements = elements.map { if case .int(let i) = $0 { .double(Double(i)) } else { $0 } }
        }
        return .array(elements)
    }
}
