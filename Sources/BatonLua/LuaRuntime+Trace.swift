import BatonCore
import CLuaShim

/// Where the scheduler and the host calls tell ``RuntimeOptions/trace`` what happens: tasks
/// spawned and ended, and every call that waits on the host (launch, send, open, find,
/// handoff, lock, ...), from its start to its status.
extension LuaRuntime {
    /// A traced call in flight: its start record's number and when it began.
    struct TracedCall {
        let trace: RunTrace
        let sequence: Int
        let task: LuaTask?
        let started: Int64
        let sendsBody: Bool
    }

    func traceSpawn(_ task: LuaTask) {
        guard let trace = options.trace else { return }
        switch task.origin {
        case .spawned(let at): trace.taskSpawned(task, parent: current, name: nil, at: at)
        case .timer(_, let at): trace.taskSpawned(task, parent: current, name: task.name, at: at)
        case .main, .host: trace.taskSpawned(task, parent: current, name: task.name, at: nil)
        }
    }

    func traceTaskEnd(_ task: LuaTask, status: String) {
        options.trace?.taskEnded(task, status: status)
    }

    /// Records call.start for a host call about to wait: the device (argument 1: a name, an
    /// address, or a device table's name or id) and, for a service, its name (argument 2).
    /// Strings go from Lua's stack into the line without becoming Swift strings.
    func traceCallStart(_ call: HostCall) -> TracedCall? {
        guard let trace = options.trace else { return nil }
        let lua = call.lua
        var sendsBody = false
        switch call.traced {
        case .untraced: return nil
        case .send: sendsBody = true
        case .call, .service: break
        }
        trace.record("call.start", task: current) { line in
            line.field("call", call.name)
            device(at: 1, on: lua, into: &line)
            if call.name == "baton.handoff" {
                // A handoff is between two devices: the trace names both.
                device(at: 1, on: lua, into: &line, field: "source")
                device(at: 2, on: lua, into: &line, field: "target")
            }
            if case .service = call.traced, let service = lua.utf8(at: 2) { line.field("service", utf8: service) }
            if case .send(let message) = call.traced {
                if message == 3, let service = lua.utf8(at: 2) { line.field("service", utf8: service) }
                if trace.bodies, let body = json(at: message, on: lua) { line.field("body", body) }
            }
        }
        return TracedCall(trace: trace, sequence: trace.sequence, task: current, started: baton_monotonic_ns(), sendsBody: sendsBody)
    }

    /// Records call.end: the status (the first status-like string among the results, else
    /// `success`, or `nil` for a lone nil), the duration, and the reply's body if asked.
    func traceCallEnd(_ traced: TracedCall, results n: Int32, on lua: LuaState) {
        var status: UnsafeRawBufferPointer?
        for i in 0..<min(n, 3) {
            if let text = lua.utf8(at: -n + i), !text.isEmpty,
               text.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "_") }) {
                status = text
                break
            }
        }
        traced.trace.record("call.end", task: traced.task) { line in
            line.field("start", traced.sequence)
            if let status {
                line.field("status", utf8: status)
            } else {
                line.field("status", n > 0 && lua.type(at: -n) == .nil ? "nil" : "success")
            }
            line.field("duration", Double(baton_monotonic_ns() - traced.started) / 1e9)
            if traced.trace.bodies, traced.sendsBody, n > 0, lua.type(at: -n) == .table, let body = json(at: -n, on: lua) {
                line.field("body", body)
            }
        }
    }

    /// Records call.end for a call that raised: its class is its status.
    func traceCallEnd(_ traced: TracedCall, errorClass: ErrorClass?, message: String) {
        traced.trace.record("call.end", task: traced.task) { line in
            line.field("start", traced.sequence)
            line.field("status", errorClass?.rawValue ?? "error")
            line.field("duration", Double(baton_monotonic_ns() - traced.started) / 1e9)
            line.field("error", message)
        }
    }

    /// `"device":` (or `field`) the name argument `index` gives: a string, or a device table's name or id.
    private func device(at index: Int32, on lua: LuaState, into line: inout TraceLine, field: StaticString = "device") {
        switch lua.type(at: index) {
        case .string:
            if let name = lua.utf8(at: index) { line.field(field, utf8: name) }
        case .table:
            for key in ["name", "id"] {
                lua.rawGet(index, field: key)
                defer { lua.pop() }
                if let name = lua.utf8(at: -1) {
                    line.field(field, utf8: name)
                    return
                }
            }
        default:
            break
        }
    }

    private func json(at index: Int32, on lua: LuaState) -> JSON? {
        var reader = JSONReader(lua: lua, metatables: metatables, null: nil)
        return try? reader.read(index)
    }
}
