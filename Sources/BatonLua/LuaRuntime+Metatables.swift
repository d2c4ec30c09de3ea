import CLuaShim
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension LuaRuntime.Metatables {
    /// Baton's own userdata, as the value readers see them.
    enum Userdata {
        case date(Date)
        case uuid(UUID)
        case bytes([UInt8])
    }

    /// The Baton userdata at `index`, or nil for any other value.
    func userdata(at index: Int32, on lua: LuaState) -> Userdata? {
        guard lua_getmetatable(lua.pointer, index) != 0 else { return nil }
        let mt = lua.toPointer(at: -1)
        lua.pop()
        guard let p = lua.toUserdata(at: index) else { return nil }
        if mt == date { return .date(Date(timeIntervalSinceReferenceDate: p.load(as: Double.self))) }
        if mt == uuid { return .uuid(LuaRuntime.uuid(at: p)) }
        if mt == bytes {
            LuaRuntime.pushBytesString(lua, at: index)
            defer { lua.pop() }
            return .bytes(lua.toBytes(at: -1) ?? [])
        }
        return nil
    }

    /// Whether the table at `index` carries the `baton.array` mark.
    func isMarkedArray(_ index: Int32, on lua: LuaState) -> Bool {
        guard lua_getmetatable(lua.pointer, index) != 0 else { return false }
        defer { lua.pop() }
        return lua.toPointer(at: -1) == array
    }
}

/// The tables a reader is inside of: finds cycles and caps the nesting.
struct TableNesting {
    private var tables: [UnsafeRawPointer] = []
    let maxDepth: Int

    init(maxDepth: Int) { self.maxDepth = maxDepth }

    /// Enters the table at `index`; returns why it cannot, if so.
    mutating func enter(_ index: Int32, on lua: LuaState) -> String? {
        let table = lua.toPointer(at: index)!
        if tables.contains(table) { return "cycle: the table contains itself" }
        if tables.count >= maxDepth { return "nested deeper than \(maxDepth) levels" }
        guard lua.checkStack(6) else { return "nested too deeply" }
        tables.append(table)
        return nil
    }

    mutating func leave() { tables.removeLast() }
}
