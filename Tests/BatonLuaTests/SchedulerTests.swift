import BatonCore
import BatonLua
import NIOCore
import Testing

@Suite("The scheduler: coroutines, sleeps, tasks, timers and waiting host functions")
struct SchedulerTests {
    @Test("tasks start on the next turn in spawn order, and sleeps wake in deadline order")
    func ordering() async throws {
        let (outcome, record) = try await runScript("""
            local log = {}
            local function rec(x) log[#log + 1] = x end
            baton.spawn(function() rec("a1") baton.sleep(0.06) rec("a2") end)
            baton.spawn(function() rec("b1") baton.sleep(0.02) rec("b2") end)
            rec("main")
            baton.sleep(0)
            rec("main after yield")
            baton.sleep(0.12)
            capture(table.concat(log, ","))
            """)
        #expect(outcome == .completed)
        #expect(record.values == [.string("main,a1,b1,main after yield,b2,a2")])
    }

    @Test("spawn passes arguments; wait returns every result, also after the task is done")
    func spawnAndWait() async throws {
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function(a, b) baton.sleep(0.01) return a + b, "sum", nil end, 2, 3)
            capture(t:status())
            local x, y, z = t:wait()
            capture(x); capture(y); capture(select("#", t:wait())); capture(t:status())
            local quick = baton.spawn(function() return "quick" end)
            baton.sleep(0.01)
            capture(quick:wait())
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.string("running"), .int(5), .string("sum"), .int(3), .string("done"), .string("quick")])
    }

    @Test("nested spawns: a task spawns and waits for its own tasks")
    func nestedSpawns() async throws {
        let (outcome, record) = try await runScript("""
            local function tree(depth)
              if depth == 0 then baton.sleep(0.001) return 1 end
              local l, r = baton.spawn(tree, depth - 1), baton.spawn(tree, depth - 1)
              return l:wait() + r:wait()
            end
            capture(baton.spawn(tree, 6):wait())
            """)
        #expect(outcome == .completed)
        #expect(record.values == [.int(64)])
    }

    @Test("an error in a task is reported with its traceback, raised by wait, and the run goes on with exit code 1")
    func errorInTask() async throws {
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function()
              baton.sleep(0.01)
              error("boom")
            end)
            capture(t:status())
            local ok, err = pcall(t.wait, t)
            capture({tostring(ok), err, t:status()})
            capture("after")
            """)
        #expect(outcome == .failed)
        #expect(record.values == [.string("running"), .array([.string("false"), .string("test:3: boom"), .string("failed")]), .string("after")])
        #expect(record.failures.count == 1)
        let failure = try #require(record.failures.first)
        #expect(failure.message == "test:3: boom")
        #expect(failure.context == "task 2 (spawned at test:1)")
        #expect(failure.traceback.contains("test:3: in function <test:1>"))
    }

    @Test("an error in a timer callback is reported; other timers keep firing")
    func errorInTimer() async throws {
        let (outcome, record) = try await runScript("""
            local n = 0
            baton.after(0.01, function() local x = nil; return x.field end)
            baton.every(0.005, function(timer) n = n + 1; if n == 5 then timer:stop(); capture(n) end end)
            """)
        #expect(outcome == .failed)
        #expect(record.values == [.int(5)])
        #expect(record.failures.map(\.message) == ["test:2: attempt to index a nil value (local 'x')"])
        #expect(record.failures.first?.context == "timer 1 (set at test:2)")
    }

    @Test("timers: after fires once, stop prevents firing, every passes its handle and stops")
    func timers() async throws {
        let (outcome, record) = try await runScript("""
            local fired = {}
            local a = baton.after(0.01, function(t) fired[#fired + 1] = "a:" .. tostring(t:active()) end)
            local b = baton.after(0.01, function() fired[#fired + 1] = "b" end)
            capture(b:stop()); capture(b:stop()); capture(a:active())
            local ticks = 0
            baton.every(0.002, function(t) ticks = ticks + 1; if ticks == 3 then t:stop() end end)
            while ticks < 3 or a:active() do baton.sleep(0.005) end
            baton.sleep(0.01)
            capture(table.concat(fired, ",")); capture(ticks); capture(a:active())
            """)
        #expect(outcome == .completed)
        #expect(record.values == [.bool(true), .bool(false), .bool(true), .string("a:false"), .int(3), .bool(false)])
    }

    @Test("the run lasts until the last timer and task are done, then ends by itself")
    func lifetime() async throws {
        let (outcome, record) = try await runScript("""
            baton.after(0.03, function() capture("late timer") end)
            baton.spawn(function() baton.sleep(0.02) capture("task") end)
            capture("main returns")
            """)
        #expect(outcome == .completed)
        #expect(record.values == [.string("main returns"), .string("task"), .string("late timer")])
    }

    @Test("tasks that wait for each other with nothing else pending are a deadlock: reported, exit 1")
    func deadlock() async throws {
        let (outcome, record) = try await runScript("""
            local a, b
            a = baton.spawn(function() baton.sleep(0) return b:wait() end)
            b = baton.spawn(function() baton.sleep(0) return a:wait() end)
            """)
        #expect(outcome == .failed)
        #expect(record.failures.first?.message.hasPrefix("deadlock: task 2, task 3 wait for each other") == true,
                "\(record.failures)")
    }

    @Test("a task waiting for itself gets an error")
    func selfWait() async throws {
        let (_, record) = try await runScript("""
            local me
            me = baton.spawn(function() baton.sleep(0) capture(select(2, pcall(me.wait, me))) end)
            """)
        #expect(record.values == [.string("a task cannot wait for itself")])
    }

    @Test("waiting where Lua cannot yield is a clear Lua error, not a crash")
    func notYieldable() async throws {
        let (outcome, record) = try await runScript("""
            local ok, err = pcall(table.sort, {3, 1, 2}, function(a, b) baton.sleep(0) return a < b end)
            capture(err)
            local co = coroutine.wrap(function() baton.sleep(0.001) return "inner" end)
            ok, err = pcall(table.sort, {2, 1}, function(a, b) return co() < "z" end)
            capture(err)
            capture("still running")
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values.count == 3)
        #expect(record.values.first == .string("test:1: baton.sleep cannot wait here: it was called where Lua cannot yield (inside a metamethod, an iterator or a C function such as table.sort)"))
        if case .string(let s) = record.values[1] { #expect(s.contains("cannot wait here")) } else { Issue.record("\(record.values)") }
        #expect(record.values.last == .string("still running"))
    }

    @Test("a coroutine the script makes can wait; its own yields still reach its own resume; a task's own coroutine cannot yield")
    func userCoroutines() async throws {
        let (outcome, record) = try await runScript("""
            local gen = coroutine.wrap(function(a)
              baton.sleep(0.001)
              local b = coroutine.yield(a + 1)
              baton.sleep(0.001)
              return a + b
            end)
            capture(gen(1)); capture(gen(10))
            local co = coroutine.create(function() baton.sleep(0.001) coroutine.yield("y") error("inner boom", 0) end)
            local ok1, v1 = coroutine.resume(co)
            local ok2, e2 = coroutine.resume(co)
            capture(tostring(ok1) .. " " .. v1); capture(tostring(ok2) .. " " .. e2); capture(coroutine.status(co))
            -- a task's coroutine is a main thread to the script, as the main chunk is to lua
            local t = baton.spawn(function() return pcall(coroutine.yield) end)
            capture(select(2, t:wait()))
            """)
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [
            .int(2), .int(11), .string("true y"), .string("false inner boom"), .string("dead"),
            .string("attempt to yield from outside a coroutine"),
        ])
    }

    @Test("a task the host starts is a main thread to the script, also when it reuses a finished one's coroutine")
    func hostTaskIsMainThread() async throws {
        let (outcome, record) = try await runScript("""
            local threads = {}
            local function probe()
              local co, main = coroutine.running()
              threads[#threads + 1] = co
              capture(select(2, pcall(coroutine.yield))); capture(coroutine.isyieldable()); capture(main)
            end
            host_run(probe)
            baton.sleep(0.01)
            host_run(probe)
            baton.sleep(0.01)
            capture(threads[1] == threads[2])
            """) { runtime in
            runtime.registerGlobal("host_run") { call in
                let runtime = call.runtime
                let function = runtime.reference(at: 1, on: call.lua)
                runtime.startTask(function: function, name: "host task", arguments: { _ in 0 }) { _ in
                    runtime.release(function)
                }
                return .values(0)
            }
        }
        #expect(outcome == .completed, "\(record.failures)")
        let probe: [Value] = [.string("attempt to yield from outside a coroutine"), .bool(false), .bool(true)]
        #expect(record.values == probe + probe + [.bool(true)])
    }

    @Test("baton.exit ends the run at once with its code, from any task")
    func exit() async throws {
        let (outcome, record) = try await runScript("""
            baton.spawn(function() baton.sleep(0.01) baton.exit(7) end)
            baton.every(0.001, function() end)
            baton.sleep(5)
            capture("not reached")
            """)
        #expect(outcome == .exited(7))
        #expect(record.values == [])
    }

    @Test("an async Swift host function suspends only its task, returns results, and raises errors at the call site")
    func asyncHostFunction() async throws {
        let (outcome, record) = try await runScript("""
            local t = baton.spawn(function() return fetch("a", 0.03) end)
            capture(fetch("b", 0.01))
            capture(t:wait())
            local ok, err = pcall(fetch, "fail", 0)
            capture(err)
            capture(select(2, pcall(function() return fetch("fail", 0) end)))
            """) { runtime in
            runtime.registerGlobal("fetch") { call in
                let key = try call.string(1)
                let seconds = try call.seconds(2)
                return try call.runtime.wait(call, for: { @Sendable in
                    try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                    if key == "fail" { throw FetchError() }
                    return "value of \(key)"
                }, deliver: { value, lua in
                    lua.push(value)
                    return 1
                })
            }
        }
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [
            .string("value of b"), .string("value of a"), .string("fetch failed"), .string("test:6: fetch failed"),
        ])
    }

    @Test("a host function waiting on an EventLoopFuture completed from another thread")
    func futureHostFunction() async throws {
        let (outcome, record) = try await runScript("""
            local results = {}
            local tasks = {}
            for i = 1, 50 do tasks[i] = baton.spawn(function() return later(i) end) end
            for i = 1, 50 do results[i] = tasks[i]:wait() end
            capture(results)
            """) { runtime in
            runtime.registerGlobal("later") { call in
                let i = try call.integer(1)
                let other = MultiThreadedEventLoopGroupHolder.other.next()
                let future = other.scheduleTask(in: .milliseconds(Int64(i % 7))) { i * 10 }.futureResult
                return try call.runtime.wait(call, for: future) { value, lua in
                    lua.push(value)
                    return 1
                }
            }
        }
        #expect(outcome == .completed, "\(record.failures)")
        #expect(record.values == [.array((1...50).map { .int(Int64($0 * 10)) })])
    }

    @Test("keep-alive holds the run open until released")
    func keepAlive() async throws {
        let (outcome, record) = try await runScript("""
            hold(0.03)
            capture("main returned")
            """) { runtime in
            runtime.registerGlobal("hold") { call in
                let seconds = try call.seconds(1)
                let runtime = call.runtime
                runtime.retainKeepAlive()
                runtime.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
                    runtime.releaseKeepAlive()
                }
                return .values(0)
            }
        }
        #expect(outcome == .completed)
        #expect(record.values == [.string("main returned")])
    }
}

struct FetchError: Error, CustomStringConvertible {
    var description: String { "fetch failed" }
}

import NIOPosix

enum MultiThreadedEventLoopGroupHolder {
    /// A second group, so futures complete on threads other than the runtime's.
    static let other = MultiThreadedEventLoopGroup(numberOfThreads: 2)
}
