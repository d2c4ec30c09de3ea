import BatonCore
import BatonLua
import NIOCore
import Testing

/// What the host saw of the tasks it started.
final class HostTasks: @unchecked Sendable {
    var started: LuaTaskID?
    var outcomes: [ScriptFailure] = []
}

@Suite("Cancelling tasks: h:cancel() and LuaRuntime.cancelTask", .timeLimit(.minutes(3)))
struct CancellationTests {
    @Test("a sleeping task cancelled: its to-be-closed variables close, its status is cancelled, wait raises, and the run ends without waiting for the sleep")
    func cancelSleeping() async throws {
        // Were the sleep still pending, the run would last until the timeout: .timedOut.
        let (outcome, record) = try await runScript("""
            local log = {}
            local t = baton.spawn(function()
              local guard <close> = setmetatable({}, { __close = function(_, err) log[#log + 1] = "closed, error " .. tostring(err) end })
              baton.sleep(3600)
              log[#log + 1] = "woke"
            end)
            baton.sleep(0.01)
            capture(t:status())
            capture(t:cancel())
            capture(log)
            capture(t:status())
            capture(select(2, pcall(t.wait, t)))
            capture(t:cancel())
            """, timeout: .seconds(30))
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [
            .string("running"), .bool(true), .array([.string("closed, error nil")]), .string("cancelled"),
            .string("task 2 was cancelled"), .bool(false),
        ])
        #expect(record.failures.isEmpty, "a cancellation is not a failure: \(record.failures)")
    }

    @Test("a task that has finished, or failed, is not cancelled: cancel returns false and the outcome stays")
    func cancelFinished() async throws {
        let (outcome, record) = try await runScript("""
            local done = baton.spawn(function() return 42 end)
            local broken = baton.spawn(function() error("broke", 0) end)
            baton.sleep(0)
            capture(done:cancel()); capture(done:status()); capture(done:wait())
            capture(broken:cancel()); capture(broken:status())
            """)
        #expect(outcome == .failed)
        #expect(record.values == [.bool(false), .string("done"), .int(42), .bool(false), .string("failed")])
    }

    @Test("a task cannot cancel itself: cancel raises, telling it to return")
    func cancelSelf() async throws {
        let (outcome, record) = try await runScript("""
            local h
            h = baton.spawn(function()
              baton.sleep(0)
              local ok, err = pcall(h.cancel, h)
              return ok, err
            end)
            local ok, err = h:wait()
            capture(ok); capture(err)
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.bool(false), .string("task 2 cannot cancel itself: return from its function instead")])
    }

    @Test("a task waiting for another is cancelled: it never resumes, and the task it waited for goes on")
    func cancelWaiter() async throws {
        let (outcome, record) = try await runScript("""
            local slow = baton.spawn(function() baton.sleep(0.05) return "slow done" end)
            local waiter = baton.spawn(function() local r = slow:wait() capture("waiter resumed with " .. r) end)
            baton.sleep(0.01)
            capture(waiter:cancel())
            capture(waiter:status())
            capture(slow:wait())
            baton.sleep(0.01)
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.bool(true), .string("cancelled"), .string("slow done")])
    }

    @Test("tasks waiting for a cancelled task raise 'task N was cancelled'")
    func waitOnCancelled() async throws {
        let (outcome, record) = try await runScript("""
            local victim = baton.spawn(function() baton.sleep(3600) end)
            local observer = baton.spawn(function()
              local ok, err = pcall(victim.wait, victim)
              return err
            end)
            baton.sleep(0.01)
            victim:cancel()
            capture(observer:wait())
            """, timeout: .seconds(30))
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.string("task 2 was cancelled")])
    }

    @Test("a cancelled task's sleep firing later resumes nothing, and the waits still pending keep the run going")
    func staleWakeIgnored() async throws {
        let (outcome, record) = try await runScript("""
            local a = baton.spawn(function() baton.sleep(0.03) capture("a woke") end)
            baton.spawn(function() baton.sleep(0.1) capture("b woke") end)
            baton.sleep(0.005)
            a:cancel()
            capture("main returns")
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.string("main returns"), .string("b woke")])
        #expect(record.failures.isEmpty)
    }

    @Test("a cancelled task's watcher stops with it, and the run can end")
    func cancelStopsWatcher() async throws {
        var network = DeviceAccess.Options()
        network.discovery.mdns = nil
        // Were the watcher still running, the run would last until the timeout: .timedOut.
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function()
              baton.watch(nil, { added = function() end })
              capture("watching")
              baton.sleep(3600)
            end)
            baton.sleep(0.02)
            capture(t:cancel())
            """, timeout: .seconds(30), network: network)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.string("watching"), .bool(true)])
    }

    @Test("a watcher of a task that returned keeps running: only cancellation stops what a task owns")
    func finishedTaskKeepsWatcher() async throws {
        var network = DeviceAccess.Options()
        network.discovery.mdns = nil
        let (outcome, record) = try await runScript("""
            local w
            baton.spawn(function() w = baton.watch(nil, {}) end):wait()
            baton.after(0.05, function() capture("timer fired") w:stop() end)
            """, timeout: .seconds(30), network: network)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.string("timer fired")])
    }

    @Test("an error in a __close while cancelling is reported, and the run fails")
    func errorWhileClosing() async throws {
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function()
              local guard <close> = setmetatable({}, { __close = function() error("close broke") end })
              baton.sleep(3600)
            end)
            baton.sleep(0.01)
            capture(t:cancel())
            capture(t:status())
            """, timeout: .seconds(30))
        #expect(outcome == .failed)
        #expect(record.values == [.bool(true), .string("cancelled")])
        #expect(record.failures.map(\.message) == ["test:2: close broke"])
    }

    @Test("a __close that tries to wait while its task is cancelled gets an error, not a wait")
    func closeCannotWait() async throws {
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function()
              local guard <close> = setmetatable({}, { __close = function()
                local ok, err = pcall(baton.sleep, 0.01)
                capture(ok)
              end })
              baton.sleep(3600)
            end)
            baton.sleep(0.01)
            capture(t:cancel())
            """, timeout: .seconds(30))
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.bool(false), .bool(true)])
    }

    @Test("the host cancels a task it started: to-be-closed variables close, completion hears a cancellation, nothing is reported")
    func hostCancels() async throws {
        let host = HostTasks()
        let (outcome, record) = try await runScript("""
            local closed = false
            host_start(function()
              local guard <close> = setmetatable({}, { __close = function() closed = true end })
              baton.sleep(3600)
            end)
            baton.sleep(0.01)
            capture(host_cancel())
            capture(closed)
            capture(host_cancel())
            """, timeout: .seconds(30)) { runtime in
            runtime.registerGlobal("host_start") { call in
                let function = call.runtime.reference(at: 1, on: call.lua)
                host.started = call.runtime.startTask(function: function, name: "provider of test", arguments: { _ in 0 }) { result in
                    if case .failure(let failure) = result { host.outcomes.append(failure) }
                }
                return .values(0)
            }
            runtime.registerGlobal("host_cancel") { call in
                call.lua.push(host.started.map { call.runtime.cancelTask($0) } ?? false)
                return .values(1)
            }
        }
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.bool(true), .bool(true), .bool(false)])
        #expect(host.outcomes.map(\.message) == ["provider of test was cancelled"])
        #expect(host.outcomes.map(\.isCancellation) == [true])
        #expect(record.failures.isEmpty)
    }
}
