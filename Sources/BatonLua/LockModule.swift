import BatonCore
import CLuaShim
import Foundation
import NIOCore

/// `baton.lock(name [, {wait = seconds}])`: a lease on a ``NamedLock`` that runs share across
/// processes ("one script moves playback on the TV at a time"). Waiting polls the kernel lock
/// from the loop, never blocking it. A lease is let go by `lease:release()`, when a
/// to-be-closed variable holding it goes out of scope, or when the run ends.
public final class LockModule: LuaModule, @unchecked Sendable {
    private var leases: [Int: NamedLock] = [:]
    private var nextLease = 1
    /// Who holds what this run takes: this process, a run id of its own, the command line.
    private let holder: NamedLock.Holder

    /// A module for one run.
    public init(runID: String = UUID().uuidString.lowercased(), command: String = CommandLine.arguments.joined(separator: " ")) {
        holder = NamedLock.Holder(runID: runID, command: command)
    }

    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        let lua = runtime.state
        luaL_newmetatable(lua.pointer, "baton.lease")
        runtime.register("__close", in: -1, qualifier: "lease") { [self] call in
            release(call)
            return .values(0)
        }
        lua.newTable()
        runtime.register("release", in: -1, qualifier: "lease") { [self] call in
            release(call)
            return .values(0)
        }
        runtime.register("held", in: -1, qualifier: "lease") { [self] call in
            call.lua.push(leaseNumber(call).map { leases[$0] != nil } ?? false)
            return .values(1)
        }
        lua.rawSet(-2, field: "__index")
        lua.pop()
        runtime.register("lock", in: m, qualifier: "baton") { [self] call in try lock(call) }
    }

    /// Lets go of every lease the run still holds.
    public func runFinished(_ runtime: LuaRuntime) {
        for lock in leases.values { lock.release() }
        leases = [:]
    }

    private func lock(_ call: HostCall) throws -> HostResult {
        let name = try call.string(1)
        if let problem = NamedLock.problem(with: name) { throw call.argumentError(1, problem) }
        var wait: Double = 0
        if call.lua.type(at: 2) == .table {
            let options = OptionTable(call, at: 2, function: "baton.lock")
            try options.check(allowed: ["wait"])
            if let seconds = try options.number("wait") {
                guard seconds >= 0, seconds <= 86_400 else {
                    throw HostError.message("baton.lock: wait must be a number of seconds from 0 to 86400, got \(seconds)")
                }
                wait = seconds
            }
        } else if !call.isNoneOrNil(2) {
            throw call.argumentError(2, "options table expected ({wait = 5}), got \(call.lua.typeName(at: 2))")
        }
        let runtime = call.runtime
        let loop = runtime.eventLoop
        let acquired = loop.makePromise(of: NamedLock.self)
        let deadline = NIODeadline.now() + .nanoseconds(Int64(wait * 1e9))
        let holder = self.holder
        @Sendable func attempt() {
            do {
                if let lock = try NamedLock.tryAcquire(name, holder: holder) { return acquired.succeed(lock) }
            } catch {
                // A bad name or an unsafe lock folder: the caller's to fix, as usage is.
                return acquired.fail(HostError.classed(.usage, "baton.lock: \(error)"))
            }
            guard NIODeadline.now() < deadline else {
                let held = NamedLock.status(of: name).holder.map { " by \($0.description)" } ?? ""
                return acquired.fail(HostError.classed(.lockHeld, "lock \(name) is held\(held)"))
            }
            loop.scheduleTask(in: .milliseconds(25)) { attempt() }
        }
        attempt()
        return try runtime.wait(call, for: acquired.futureResult) { [self] lock, lua in
            let number = nextLease
            nextLease += 1
            leases[number] = lock
            lua.newTable()
            lua.push(name)
            lua.rawSet(-2, field: "name")
            lua.push(number)
            lua.rawSet(-2, field: "lease")
            luaL_setmetatable(lua.pointer, "baton.lease")
            return 1
        }
    }

    private func leaseNumber(_ call: HostCall) -> Int? {
        guard call.lua.type(at: 1) == .table else { return nil }
        call.lua.rawGet(1, field: "lease")
        defer { call.lua.pop() }
        return call.lua.toInteger(at: -1).map { Int($0) }
    }

    private func release(_ call: HostCall) {
        guard let number = leaseNumber(call), let lock = leases.removeValue(forKey: number) else { return }
        lock.release()
    }
}
