import BatonWire
import CLuaShim

/// A borrowed `lua_State` (the main thread or a coroutine) with the few operations the
/// runtime needs. Only functions that can never raise a Lua error are called through it:
/// raw table access, pushes and conversions. Anything that raises lives in `CLuaShim`.
public struct LuaState: @unchecked Sendable {
    /// The underlying `lua_State *`.
    public let pointer: OpaquePointer

    /// Wraps a `lua_State *` owned by a runtime.
    public init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// The Lua type tags.
    public enum LuaType: Int32 {
        case none = -1, `nil` = 0, boolean, lightUserdata, number, string, table, function, userdata, thread

        /// The name Lua's own messages use (`luaL_typename`).
        public var name: String {
            switch self {
            case .none: "no value"
            case .nil: "nil"
            case .boolean: "boolean"
            case .lightUserdata, .userdata: "userdata"
            case .number: "number"
            case .string: "string"
            case .table: "table"
            case .function: "function"
            case .thread: "thread"
            }
        }
    }

    @inline(__always) public var top: Int32 { lua_gettop(pointer) }
    @inline(__always) public func setTop(_ index: Int32) { lua_settop(pointer, index) }
    @inline(__always) public func pop(_ n: Int32 = 1) { baton_pop(pointer, n) }
    @inline(__always) public func absolute(_ index: Int32) -> Int32 { lua_absindex(pointer, index) }
    @inline(__always) public func type(at index: Int32) -> LuaType {
        LuaType(rawValue: lua_type(pointer, index)) ?? .none
    }
    /// The type name as Lua's messages print it; userdata with a `__name` give that name.
    public func typeName(at index: Int32) -> String {
        let t = type(at: index)
        if t == .userdata, let name = metatableName(at: index) { return name }
        return t.name
    }
    /// Makes room for `n` more slots; false when the stack cannot grow.
    @inline(__always) public func checkStack(_ n: Int32) -> Bool { lua_checkstack(pointer, n) != 0 }

    // MARK: pushing

    @inline(__always) public func pushNil() { lua_pushnil(pointer) }
    @inline(__always) public func push(_ b: Bool) { lua_pushboolean(pointer, b ? 1 : 0) }
    @inline(__always) public func push(_ i: Int64) { lua_pushinteger(pointer, lua_Integer(i)) }
    @inline(__always) public func push(_ i: Int) { lua_pushinteger(pointer, lua_Integer(i)) }
    @inline(__always) public func push(_ d: Double) { lua_pushnumber(pointer, d) }
    @inline(__always) public func pushValue(at index: Int32) { lua_pushvalue(pointer, index) }
    public func push(_ s: String) {
        var s = s
        s.withUTF8 { buf in _ = lua_pushlstring(pointer, buf.baseAddress, buf.count) }
    }
    public func push(bytes: some Collection<UInt8>) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ buf in
            _ = lua_pushlstring(pointer, UnsafeRawPointer(buf.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }, buf.count)
        }) { return done }
        push(bytes: Array(bytes))
    }
    @inline(__always) public func newTable(arrayCount: Int32 = 0, recordCount: Int32 = 0) {
        lua_createtable(pointer, arrayCount, recordCount)
    }

    // MARK: reading

    @inline(__always) public func toBool(at index: Int32) -> Bool { lua_toboolean(pointer, index) != 0 }
    @inline(__always) public func isInteger(at index: Int32) -> Bool { lua_isinteger(pointer, index) != 0 }
    @inline(__always) public func toInteger(at index: Int32) -> Int64? {
        var ok: Int32 = 0
        let v = baton_tointeger(pointer, index, &ok)
        return ok != 0 ? Int64(v) : nil
    }
    @inline(__always) public func toNumber(at index: Int32) -> Double? {
        var ok: Int32 = 0
        let v = baton_tonumber(pointer, index, &ok)
        return ok != 0 ? v : nil
    }
    /// The string at `index`, only if it is a string (numbers are not converted in place).
    public func toString(at index: Int32) -> String? {
        guard type(at: index) == .string else { return nil }
        var len = 0
        guard let p = baton_tostring(pointer, index, &len) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
    }
    /// The string at `index` if it is a string of well-formed UTF-8; nil otherwise.
    public func toValidString(at index: Int32) -> String? {
        utf8(at: index).map { String(decoding: $0, as: UTF8.self) }
    }
    /// The bytes of the string at `index` if it is a string of well-formed UTF-8 (RFC 3629, as
    /// the wire requires); nil otherwise. Valid while the string stays on the stack.
    func utf8(at index: Int32) -> UnsafeRawBufferPointer? {
        guard type(at: index) == .string else { return nil }
        var len = 0
        guard let p = baton_tostring(pointer, index, &len) else { return nil }
        let bytes = UnsafeRawBufferPointer(start: p, count: len)
        return UTF8Validation.isValid(bytes) ? bytes : nil
    }
    /// The raw bytes of the string at `index`, only if it is a string.
    public func toBytes(at index: Int32) -> [UInt8]? {
        guard type(at: index) == .string else { return nil }
        var len = 0
        guard let p = baton_tostring(pointer, index, &len) else { return nil }
        return Array(UnsafeRawBufferPointer(start: p, count: len))
    }
    /// `tostring(v)` as Lua prints it, with `__tostring` run protected.
    public func describe(at index: Int32) -> String {
        var len = 0
        let p = baton_safe_tostring(pointer, index, &len)
        defer { pop() }
        guard let p else { return "?" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
    }
    @inline(__always) public func rawLength(at index: Int32) -> Int { Int(lua_rawlen(pointer, index)) }
    @inline(__always) public func toPointer(at index: Int32) -> UnsafeRawPointer? { lua_topointer(pointer, index) }
    @inline(__always) public func toUserdata(at index: Int32) -> UnsafeMutableRawPointer? { lua_touserdata(pointer, index) }

    // MARK: tables (raw access only: no metamethod may run from Swift)

    @inline(__always) @discardableResult public func rawGet(_ table: Int32) -> LuaType { LuaType(rawValue: lua_rawget(pointer, table)) ?? .none }
    @inline(__always) @discardableResult public func rawGet(_ table: Int32, index: Int) -> LuaType {
        LuaType(rawValue: lua_rawgeti(pointer, table, lua_Integer(index))) ?? .none
    }
    @inline(__always) public func rawSet(_ table: Int32) { lua_rawset(pointer, table) }
    @inline(__always) public func rawSet(_ table: Int32, index: Int) { lua_rawseti(pointer, table, lua_Integer(index)) }
    /// `t[key] = value on top`, raw.
    public func rawSet(_ table: Int32, field: String) {
        let t = absolute(table)
        push(field)
        baton_insert(pointer, -2)
        lua_rawset(pointer, t)
    }
    /// Pushes `t[key]`, raw.
    @discardableResult public func rawGet(_ table: Int32, field: String) -> LuaType {
        let t = absolute(table)
        push(field)
        return rawGet(t)
    }
    @inline(__always) public func next(_ table: Int32) -> Bool { lua_next(pointer, table) != 0 }

    // MARK: registry and metatables

    /// Stores the value on top in the registry and pops it; returns its reference.
    @inline(__always) public func ref() -> Int32 { luaL_ref(pointer, baton_registryindex()) }
    @inline(__always) public func unref(_ ref: Int32) { luaL_unref(pointer, baton_registryindex(), ref) }
    @inline(__always) @discardableResult public func pushRef(_ ref: Int32) -> LuaType {
        rawGet(baton_registryindex(), index: Int(ref))
    }
    @inline(__always) public func setMetatable(_ index: Int32) { lua_setmetatable(pointer, index) }
    /// Pushes the metatable registered under `name` (nil if none).
    @inline(__always) public func pushMetatable(named name: String) {
        _ = baton_getmetatable_named(pointer, name)
    }
    /// The `__name` field of the value's metatable, if any.
    public func metatableName(at index: Int32) -> String? {
        guard lua_getmetatable(pointer, index) != 0 else { return nil }
        defer { pop() }
        rawGet(-1, field: "__name")
        defer { pop() }
        return toString(at: -1)
    }
    /// The userdata at `index` if its metatable is the one registered as `name`.
    public func testUserdata(at index: Int32, named name: String) -> UnsafeMutableRawPointer? {
        luaL_testudata(pointer, index, name)
    }
    /// Whether the value at `index` has exactly the metatable at `metatable`.
    public func hasMetatable(at index: Int32, equalTo metatable: Int32) -> Bool {
        let mt = absolute(metatable)
        guard lua_getmetatable(pointer, index) != 0 else { return false }
        defer { pop() }
        return lua_rawequal(pointer, -1, mt) != 0
    }
    @inline(__always) public func rawEqual(_ a: Int32, _ b: Int32) -> Bool { lua_rawequal(pointer, a, b) != 0 }
    @inline(__always) public var isYieldable: Bool { baton_isyieldable(pointer) != 0 }
}
