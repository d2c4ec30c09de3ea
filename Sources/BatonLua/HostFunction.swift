import CLuaShim

/// What a host function tells its C trampoline to do once every Swift frame has returned.
public enum HostResult: Sendable {
    /// Return this many values from the top of the stack.
    case values(Int32)
    /// Suspend the calling task; the host resumes it later through a ``Suspension``.
    case wait
}

/// The body of a host function: reads its arguments from `call`, pushes results, and returns
/// what the trampoline must do. Throwing a ``HostError`` raises a Lua error in the caller.
public typealias HostBody = (HostCall) throws -> HostResult

/// Keeps a host function's body alive for as long as the Lua closure that calls it.
final class HostFunctionBox {
    let name: String
    let body: HostBody
    unowned let runtime: LuaRuntime

    init(name: String, body: @escaping HostBody, runtime: LuaRuntime) {
        self.name = name
        self.body = body
        self.runtime = runtime
    }
}

/// The one Swift function every trampoline calls. It never lets an error escape as a longjmp:
/// errors become return codes the trampoline acts on.
private func dispatchHostCall(_ L: OpaquePointer?, _ box: UnsafeMutableRawPointer?) -> Int32 {
    let box = Unmanaged<HostFunctionBox>.fromOpaque(box!).takeUnretainedValue()
    let lua = LuaState(L!)
    do {
        switch try box.body(HostCall(lua: lua, runtime: box.runtime, name: box.name)) {
        case .values(let n): return n
        case .wait: return BATON_WAIT
        }
    } catch let error as HostError {
        switch error {
        case .message(let text):
            lua.push(text)
            return BATON_RAISE_WHERE
        case .valueOnTop:
            return BATON_RAISE
        case .classed(let errorClass, let text):
            box.runtime.pushError(errorClass, message: LuaRuntime.position(on: lua) + text, on: lua)
            return BATON_RAISE
        }
    } catch {
        lua.push(String(describing: error))
        return BATON_RAISE_WHERE
    }
}

enum HostDispatch {
    /// Installs the dispatch function once per process.
    static let installed: Void = baton_set_dispatch(dispatchHostCall)
}
