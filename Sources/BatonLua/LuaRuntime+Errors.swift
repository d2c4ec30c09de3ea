import BatonCore
import CLuaShim

extension LuaRuntime {
    /// The metatable name of the errors Baton raises with a class.
    static let errorMetatable = "baton.error"

    /// The metatable of classed errors: `tostring(err)` is its message. Part of the core, since
    /// any host function may raise one.
    func installErrorMetatable() {
        let lua = state
        luaL_newmetatable(lua.pointer, Self.errorMetatable)
        metatables.error = lua.toPointer(at: -1)
        lua.pushValue(at: -1)
        metatables.errorRef = lua.ref()
        register("__tostring", in: -1, qualifier: "error") { call in
            guard call.lua.type(at: 1) == .table else { throw call.argumentError(1, "error expected") }
            call.lua.rawGet(1, field: "message")
            return .values(1)
        }
        lua.pop()
    }

    /// Pushes an error of `errorClass`: a table `{class = "not_found", message = "script.lua:3: ..."}`
    /// whose `tostring` is the message, so it prints like any error and `err.class` says which;
    /// `err.cause` too when a request failed for `cause` (`denied`, `not_answering`, ...).
    public func pushError(_ errorClass: ErrorClass, message: String, cause: FailureCause? = nil, on lua: LuaState) {
        lua.newTable()
        lua.push(errorClass.rawValue)
        lua.rawSet(-2, field: "class")
        if let cause {
            lua.push(cause.rawValue)
            lua.rawSet(-2, field: "cause")
        }
        lua.push(message)
        lua.rawSet(-2, field: "message")
        lua.pushRef(metatables.errorRef)
        lua.setMetatable(-2)
    }

    /// The class of the error value at `index`: one Baton raised with a class (or
    /// `baton.error` made); nil for any other value.
    func errorClass(at index: Int32, on lua: LuaState) -> ErrorClass? {
        guard lua.type(at: index) == .table, lua_getmetatable(lua.pointer, index) != 0 else { return nil }
        let mt = lua.toPointer(at: -1)
        lua.pop()
        guard mt == metatables.error else { return nil }
        lua.rawGet(index, field: "class")
        defer { lua.pop() }
        return lua.toString(at: -1).flatMap(ErrorClass.init(rawValue:))
    }

    /// The message of the classed error at `index`, read without running Lua; nil for any
    /// other value.
    func classedMessage(at index: Int32, on lua: LuaState) -> String? {
        guard errorClass(at: index, on: lua) != nil else { return nil }
        lua.rawGet(index, field: "message")
        defer { lua.pop() }
        return lua.toString(at: -1)
    }

    /// `script.lua:3: ` for the Lua code that called the running host function (or, for a
    /// suspended task, the one that called the function it waits in).
    static func position(on lua: LuaState) -> String {
        luaL_where(lua.pointer, 1)
        defer { lua.pop() }
        return lua.toString(at: -1) ?? ""
    }

    /// Resumes by raising an error of `errorClass` at the call site (`script.lua:3: message`).
    public func resume(_ suspension: Suspension, raising errorClass: ErrorClass, _ message: String, cause: FailureCause? = nil) {
        resume(suspension) { [self] lua in
            lua.push(false)
            pushError(errorClass, message: Self.position(on: lua) + message, cause: cause, on: lua)
            return 2
        }
    }
}
