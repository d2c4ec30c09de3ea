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
    /// What a trace records of its calls, worked out once from its name.
    let traced: TracedCallKind

    init(name: String, body: @escaping HostBody, runtime: LuaRuntime) {
        self.name = name
        self.body = body
        self.runtime = runtime
        traced = TracedCallKind(name)
    }
}

/// What a traced run records of a host function's calls that wait.
enum TracedCallKind {
    /// Nothing: the runtime's own bookkeeping (the batch journal).
    case untraced
    /// The call, and the device its first argument names.
    case call
    /// Also the service its second argument names (`baton.appservice.open`).
    case service
    /// Also the message argument `message`, with `--trace-bodies` (a send).
    case send(message: Int32)

    init(_ name: String) {
        if name.hasPrefix("journal.") {
            self = .untraced
        } else if name == "baton.appservice.send" {
            self = .send(message: 3)
        } else if name.hasSuffix("send") {
            self = .send(message: 2)
        } else if name.hasPrefix("baton.appservice.") {
            self = .service
        } else {
            self = .call
        }
    }
}

/// The one Swift function every trampoline calls. It never lets an error escape as a longjmp:
/// errors become return codes the trampoline acts on.
private func dispatchHostCall(_ L: OpaquePointer?, _ box: UnsafeMutableRawPointer?) -> Int32 {
    let box = Unmanaged<HostFunctionBox>.fromOpaque(box!).takeUnretainedValue()
    let lua = LuaState(L!)
    do {
        switch try box.body(HostCall(lua: lua, runtime: box.runtime, name: box.name, traced: box.traced)) {
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
        case .caused(let cause, let text):
            box.runtime.pushError(cause.errorClass, message: LuaRuntime.position(on: lua) + text, cause: cause, on: lua)
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
