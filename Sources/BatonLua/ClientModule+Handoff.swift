import BatonClient
import BatonCore
import NIOCore

extension ClientModule {
    /// `baton.handoff(from, to [, {app=, source=, volume=, busy=, timeout=, key=, precision=,
    /// tolerance=}])` → status, report (see ``BatonClient/handoff(from:to:options:)``). A
    /// cancelled task's handoff rolls back; the run lasts until it has. `busy = "replace"` or
    /// `"refuse"` says what becomes of a target that plays already (by default: refused when
    /// the source is paused). A device handed to itself raises a usage error, nothing touched.
    func handoff(_ call: HostCall) throws -> HostResult {
        let source = try deviceTarget(call, 1)
        let target = try deviceTarget(call, 2)
        let options = try handoffOptions(call, 3)
        let client = try access.client
        let runtime = call.runtime
        let owner = runtime.currentTaskID
        let promise = runtime.eventLoop.makePromise(of: HandoffReport.self)
        let work = Task { await client.handoff(from: source, to: target, options: options) }
        let number = handoffs.add(work, owner: owner)
        runtime.retainKeepAlive()
        promise.completeWithTask {
            let report = await work.value
            if report.status == .sameDevice { throw HostError.classed(.usage, "baton.handoff: \(report.detail)") }
            return report
        }
        promise.futureResult.whenComplete { [self] _ in
            handoffs.remove(number)
            runtime.releaseKeepAlive()
        }
        return try runtime.wait(call, for: promise.futureResult) { report, lua in
            lua.push(report.status.rawValue)
            runtime.push(.dictionary(report.message), on: lua)
            return 2
        }
    }

    private func handoffOptions(_ call: HostCall, _ position: Int32) throws -> HandoffOptions {
        var options = HandoffOptions()
        guard !call.isNoneOrNil(position) else { return options }
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "options table expected, got \(call.lua.typeName(at: position))")
        }
        let table = OptionTable(call, at: position, function: "baton.handoff")
        try table.check(allowed: ["app", "source", "volume", "busy", "timeout", "key", "precision", "tolerance"])
        options.app = try table.string("app")
        if let text = try table.string("source") {
            guard let policy = HandoffOptions.SourcePolicy(rawValue: text) else {
                throw HostError.message("baton.handoff: source must be \"pause\", \"stop\" or \"keep\", got \"\(text)\"")
            }
            options.source = policy
        }
        if let text = try table.string("volume") {
            guard let policy = HandoffOptions.VolumePolicy(rawValue: text) else {
                throw HostError.message("baton.handoff: volume must be \"keep\" or \"copy\", got \"\(text)\"")
            }
            options.volume = policy
        }
        if let text = try table.string("busy") {
            guard let policy = HandoffOptions.BusyPolicy(rawValue: text) else {
                throw HostError.message("baton.handoff: busy must be \"replace\" or \"refuse\", got \"\(text)\"")
            }
            options.busy = policy
        }
        if let timeout = try Self.requestTimeout(table) { options.timeout = .nanoseconds(timeout.nanoseconds) }
        if let key = try table.string("key") {
            guard !key.isEmpty else { throw HostError.message("baton.handoff: key must not be empty") }
            options.key = key
        }
        for (name, keyPath) in [("precision", \HandoffOptions.precision), ("tolerance", \HandoffOptions.tolerance)] {
            if let seconds = try table.number(name) {
                guard seconds >= 0, seconds <= 60 else {
                    throw HostError.message("baton.handoff: \(name) must be a number of seconds from 0 to 60, got \(seconds)")
                }
                options[keyPath: keyPath] = seconds
            }
        }
        return options
    }
}

/// The handoffs a run has going, by number, with the task that started each: cancelling the
/// task cancels its handoffs (which roll back).
final class RunningHandoffs: @unchecked Sendable {
    private var running: [Int: (work: Task<HandoffReport, Never>, owner: LuaTaskID?)] = [:]
    private var next = 0

    func add(_ work: Task<HandoffReport, Never>, owner: LuaTaskID?) -> Int {
        next += 1
        running[next] = (work, owner)
        return next
    }

    func remove(_ number: Int) {
        running[number] = nil
    }

    func cancel(ownedBy task: LuaTaskID) {
        for (_, handoff) in running where handoff.owner == task { handoff.work.cancel() }
    }
}
