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

    /// Host calls that are the runtime's own bookkeeping, not what the script did.
    private static func isTraced(_ name: String) -> Bool { !name.hasPrefix("journal.") }

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
    func traceCallStart(_ call: HostCall) -> TracedCall? {
        guard let trace = options.trace, Self.isTraced(call.name) else { return nil }
        let lua = call.lua
        let sendsBody = call.name.hasSuffix("send")
        trace.record("call.start", task: current) { line in
            line.field("call", call.name)
            if let device = deviceName(at: 1, on: lua) { line.field("device", device) }
            if call.name.hasPrefix("baton.appservice."), lua.type(at: 2) == .string, let service = lua.toString(at: 2) {
                line.field("service", service)
            }
            if trace.bodies, sendsBody {
                // baton.appservice.send(device, service, message); conn:send(message).
                let message: Int32 = call.name == "baton.appservice.send" ? 3 : 2
                if let body = json(at: message, on: lua) { line.field("body", body) }
            }
        }
        return TracedCall(trace: trace, sequence: trace.lastSequence, task: current, started: baton_monotonic_ns(), sendsBody: sendsBody)
    }

    /// Records call.end: the status (the first status-like string among the results, else
    /// `success`, or `nil` for a lone nil), the duration, and the reply's body if asked.
    func traceCallEnd(_ traced: TracedCall, results n: Int32, on lua: LuaState) {
        var status = n > 0 && lua.type(at: -n) == .nil ? "nil" : "success"
        for i in 0..<min(n, 3) where lua.type(at: -n + i) == .string {
            if let text = lua.toString(at: -n + i), !text.isEmpty,
               text.utf8.allSatisfy({ ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || $0 == UInt8(ascii: "_") }) {
                status = text
                break
            }
        }
        traced.trace.record("call.end", task: traced.task) { line in
            end(traced, status: status, into: &line)
            if traced.trace.bodies, traced.sendsBody, n > 0, lua.type(at: -n) == .table, let body = json(at: -n, on: lua) {
                line.field("body", body)
            }
        }
    }

    /// Records call.end for a call that raised: its class is its status.
    func traceCallEnd(_ traced: TracedCall, errorClass: ErrorClass?, message: String) {
        traced.trace.record("call.end", task: traced.task) { line in
            end(traced, status: errorClass?.rawValue ?? "error", into: &line)
            line.field("error", message)
        }
    }

    private func end(_ traced: TracedCall, status: String, into line: inout TraceLine) {
        line.field("start", traced.sequence)
        line.field("status", status)
        line.field("duration", Double(baton_monotonic_ns() - traced.started) / 1e9)
    }

    private func deviceName(at index: Int32, on lua: LuaState) -> String? {
        switch lua.type(at: index) {
        case .string: return lua.toString(at: index)
        case .table:
            for field in ["name", "id"] {
                lua.rawGet(index, field: field)
                defer { lua.pop() }
                if let s = lua.toString(at: -1) { return s }
            }
            return nil
        default: return nil
        }
    }

    private func json(at index: Int32, on lua: LuaState) -> JSON? {
        var reader = JSONReader(lua: lua, metatables: metatables, null: nil)
        return try? reader.read(index)
    }
}
