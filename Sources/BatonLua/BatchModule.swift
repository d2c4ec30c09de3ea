import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// `baton.batch(items, fn [, opts])`: runs `fn(item, ctx)` for every item, `jobs` at a time as
/// tasks on the run's one loop, retrying the error classes `retry_on` with exponential backoff
/// and jitter, cancelling an item at `item_timeout`, and returns the report (see README,
/// "Batches"). Written in Lua (Lua/batch.lua): it is scheduling over the runtime's own tasks.
/// With `journal` (a file; see ``BatchJournal``), each item's start is appended and fsynced
/// before the item runs, and its end after; a journal that cannot be written stops the batch
/// (status journal_failed, exit code 74).
/// `halt`, `timeout` and (with `signals`, once ``Interruption/catchSignals()`` was called)
/// SIGINT or SIGTERM stop it early: nothing new starts, and the report says why.
public final class BatchModule: LuaModule, @unchecked Sendable {
    public init() {}

    public func install(in runtime: LuaRuntime, table m: Int32) throws {
        let lua = runtime.state
        lua.pushValue(at: m)
        // What the Lua part needs from the host, out of the scripts' sight.
        lua.newTable()
        runtime.register("append", in: -1, qualifier: "journal") { call in try Self.append(call) }
        // What the trace (if any) learns from the batch: which item a task works for, retries,
        // and the items' own errors, which the batch catches.
        runtime.register("trace_item", in: -1, qualifier: "batch") { call in
            if let trace = call.runtime.options.trace, let task = call.runtime.current {
                trace.label(task: task, item: try call.string(1), attempt: Int(try call.integer(2)))
            }
            return .values(0)
        }
        runtime.register("retry", in: -1, qualifier: "batch") { call in
            let (item, attempt, errorClass, pause) = (try call.string(1), try call.integer(2), try call.string(3), try call.number(4))
            call.runtime.options.trace?.record("retry", task: call.runtime.current) {
                $0.field("item", item)
                $0.field("attempt", Int(attempt))
                $0.field("class", errorClass)
                $0.field("pause", pause)
            }
            return .values(0)
        }
        // What an in-doubt item's verify(item, ctx) said: done or not, or its error.
        runtime.register("verified", in: -1, qualifier: "batch") { call in
            let (item, done) = (try call.string(1), call.lua.toBool(at: 2))
            let failure = call.lua.type(at: 3) == .string ? try call.string(3) : nil
            call.runtime.options.trace?.record("verify", task: call.runtime.current) {
                $0.field("item", item)
                $0.field("done", done)
                if let failure { $0.field("error", failure) }
            }
            return .values(0)
        }
        runtime.register("item_error", in: -1, qualifier: "batch") { call in
            call.runtime.options.trace?.error(
                task: call.runtime.current, message: try call.string(1),
                errorClass: try call.string(2), traceback: try call.string(3))
            return .values(0)
        }
        runtime.register("signal", in: -1, qualifier: "batch") { call in
            let (signal, count) = Interruption.received
            call.lua.push(Int64(signal))
            call.lua.push(Int64(count))
            return .values(2)
        }
        try runtime.runChunk(Self.source, named: "baton.batch", arguments: 2)
    }

    /// `append(path, line)`: appends the line to the journal at `path` and fsyncs, off the
    /// loop; the task waits. Returns nil, or why the journal cannot be written (from then on
    /// every append fails: the batch must stop and fail, see ``BatchJournal``).
    private static func append(_ call: HostCall) throws -> HostResult {
        let path = try call.string(1), line = try call.string(2)
        let loop = call.runtime.eventLoop
        let written = NIOThreadPool.singleton.runIfActive(eventLoop: loop) { () -> String? in
            do {
                try (BatchJournal.registered(path) ?? BatchJournal.forScript(path: path)).append(line)
                return nil
            } catch {
                return "\(error)"
            }
        }
        return try call.runtime.wait(call, for: written) { failure, lua in
            if let failure { lua.push(failure) } else { lua.pushNil() }
            return 1
        }
    }

    /// The Lua half of baton.batch: Lua/batch.lua, embedded in the binary by SwiftPM
    /// (`.embedInCode`: bytes in the code, no resource bundle to install beside it).
    static let source = String(decoding: PackageResources.batch_lua, as: UTF8.self)
}
