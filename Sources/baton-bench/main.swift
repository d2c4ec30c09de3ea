// Measures the runtime's hot paths, each beside a baseline measured in the same run.
// Run through scripts/bench (release build); prints one table.
import BatonCore
import BatonLua
import CLuaShim
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// A helper mode for scripts/bench-discovery.py rather than the benchmark itself.
if CommandLine.arguments.dropFirst().first == "discovery-watcher" {
    discoveryWatcherMain()
}

/// Figures the benchmark script reports through `report(name, value)`.
final class Figures: @unchecked Sendable {
    var values: [String: Double] = [:]
}

// Each figure is the best of several rounds: the least disturbed by the machine's other work.
let script = #"""
local now, rounds = baton.now, 7
local function best(n, body)
  local b = math.huge
  for _ = 1, rounds do
    local t0 = now()
    body(n)
    local t = (now() - t0) / n
    if t < b then b = t end
  end
  return b
end

local N = 2000000
report("loop", best(N, function(n) for i = 1, n do end end))
report("host", best(N, function(n) local f = noop for i = 1, n do f() end end))
report("c", best(N, function(n) local f = math.abs for i = 1, n do f(i) end end))
report("lua", best(N, function(n) local function f(x) return x end for i = 1, n do f(i) end end))
report("sleep0", best(200000, function(n) local s = baton.sleep for i = 1, n do s(0) end end))

-- A ~1 KB message: nested dictionaries, arrays, numbers, strings, a date.
local msg = {
  Type = "playback", CreationDate = baton.date(), TargetId = "8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f",
  position = 83.5, volume = 40, muted = false, title = "The Film Title, Part One",
  queue = { "https://example.org/a", "https://example.org/b", "https://example.org/c" },
  tracks = { {id = 1, lang = "en", kind = "audio"}, {id = 2, lang = "fr", kind = "audio"},
             {id = 3, lang = "en", kind = "subtitle"} },
  device = { name = "Living Room TV", kind = "tv", model = "X-900", caps = {"hdr", "4k", "atmos"} },
  stats = { bitrate = 12000, dropped = 3, buffered = 4.25, samples = {1, 2, 3, 4, 5, 6, 7, 8} },
  chapters = { {title = "Opening", start = 0}, {title = "The Journey", start = 612.5},
               {title = "The Return", start = 2404}, {title = "Credits", start = 5520} },
  owner = { account = "a1b2c3d4e5f6", device = "Phone", app = "org.example.player", session = 77 },
  note = "Handed over from the phone to the living-room TV by a script, at the position it had reached.",
}
report("message_bytes", #baton.json.encode(msg))
report("message", best(100000, function(n) local m = baton.message for i = 1, n do m(msg) end end))
local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy(x) end
  return t
end
report("lua_copy", best(100000, function(n) for i = 1, n do copy(msg) end end))
"""#

func measureInProcess() throws -> [String: Double] {
    let figures = Figures()
    let outcome = try LuaRuntime.run(
        .string(script, chunkName: "bench"), options: RuntimeOptions(reportFailure: { f in
            print("bench script failed: \(f.message)\n\(f.traceback)")
        }), on: MultiThreadedEventLoopGroup.singleton.next()
    ) { runtime in
        runtime.registerGlobal("noop") { _ in .values(0) }
        runtime.registerGlobal("report") { call in
            figures.values[try call.string(1)] = try call.number(2)
            return .values(0)
        }
    }.wait()
    guard outcome == .completed else { fatalError("bench script: \(outcome)") }
    return figures.values
}

/// Median wall time of `runs` runs of a command, in ms.
func coldStart(_ argv: [String], runs: Int = 40) -> Double? {
    var times: [Double] = []
    for _ in 0..<runs {
        let t0 = baton_monotonic_ns()
        var pid: pid_t = 0
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        guard posix_spawnp(&pid, argv[0], &actions, nil, cargs, environ) == 0 else { return nil }
        posix_spawn_file_actions_destroy(&actions)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        guard status == 0 else { return nil }
        times.append(Double(baton_monotonic_ns() - t0) / 1e6)
    }
    times.sort()
    return times[times.count / 2]
}

func fmt(_ x: Double, _ digits: Int = 1) -> String {
    var s = String(Int((x * pow(10, Double(digits))).rounded()))
    if digits > 0 {
        while s.count <= digits { s = "0" + s }
        s.insert(".", at: s.index(s.endIndex, offsetBy: -digits))
    }
    return s
}

func row(_ what: String, _ figure: String, _ baseline: String, _ target: String, _ ok: Bool?) {
    let mark = ok.map { $0 ? "ok" : "MISSED" } ?? ""
    // At least one space between columns, however long a cell.
    func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
    print(pad(what, 46) + pad(figure, 12) + pad(baseline, 40) + pad(target, 12) + mark)
    fflush(nil) // each row as soon as it is measured
}

let args = CommandLine.arguments
let batonPath = args.count > 1 ? args[1] : "baton"
let emptyScript = args.count > 2 ? args[2] : "/dev/null"

// For profiling runs only: BATON_BENCH_ONLY=requests measures the request/response figures
// alone (no in-process figures, no launch or memory rows); =tls, those and TLS's; =pipelined,
// only pipelined requests, for long enough to profile; =handoff, the handoff figures; =batch,
// the batch figures (BATON_BENCH_BATCH_ITEMS sets their item count, 1000 by default);
// =exhaustion, the agent's memory under connection churn and a caller that never reads;
// =broker, the broker figures (BATON_BENCH_FLEET sets the simulated agents, 1000 by default);
// =broker-handoff, handoffs over the broker beside the same over TCP (BATON_BENCH_BROKER_HANDOFFS
// sets how many of each, 10 by default). The default runs everything.
switch ProcessInfo.processInfo.environment["BATON_BENCH_ONLY"] {
case "requests"?:
    do { try networkBench(baton: batonPath, requestsOnly: true) } catch { print("network benchmark failed: \(error)") }
    exit(0)
case "pipelined"?:
    do { try pipelinedBench(baton: batonPath) } catch { print("network benchmark failed: \(error)") }
    exit(0)
case "handoff"?:
    do { try handoffBench(baton: batonPath) } catch { print("handoff benchmark failed: \(error)") }
    exit(0)
case "batch"?:
    do { try batchBench(baton: batonPath) } catch { print("batch benchmark failed: \(error)") }
    exit(0)
case "exhaustion"?:
    do { try exhaustionBench(baton: batonPath) } catch { print("exhaustion benchmark failed: \(error)") }
    exit(0)
case "broker"?:
    do { try brokerBench(baton: batonPath) } catch { print("broker benchmark failed: \(error)") }
    exit(0)
case "broker-handoff"?:
    do { try brokerHandoffBench(baton: batonPath) } catch { print("broker handoff benchmark failed: \(error)") }
    exit(0)
case "tls"?:
    do { try networkBench(baton: batonPath, requestsOnly: true, tls: true) } catch { print("network benchmark failed: \(error)") }
    exit(0)
default:
    break
}

let f = try measureInProcess()
let ns = 1e9, us = 1e6
print("Baton benchmark (each figure beside its baseline from this run; best of 7 rounds)")
print(String(repeating: "-", count: 118))
row("what", "figure", "baseline (same run)", "target", nil)
print(String(repeating: "-", count: 118))
let host = f["host"]! * ns, c = f["c"]! * ns, lua = f["lua"]! * ns, loop = f["loop"]! * ns
row("Lua → Swift host function call", "\(fmt(host)) ns", "C \(fmt(c)) ns · Lua \(fmt(lua)) ns · loop \(fmt(loop)) ns", "≤ 60 ns", host <= 60)
let sleep0 = f["sleep0"]! * us
row("async round trip: baton.sleep(0)", "\(fmt(sleep0, 2)) µs", "Lua → Lua call \(fmt(lua / 1000, 3)) µs", "≤ 2 µs", sleep0 <= 2)
let message = f["message"]! * us, copy = f["lua_copy"]! * us
row("Lua → Value → Lua, \(Int(f["message_bytes"]!)) B message", "\(fmt(message, 2)) µs", "deep copy in Lua \(fmt(copy, 2)) µs", "≤ 2 µs", message <= 2)
let formats = formatFigures()
row("JSON → tree, the same message", "\(fmt(formats.json / 1000, 2)) µs", "Foundation JSONSerialization \(fmt(formats.foundationJSON / 1000, 2)) µs", "", nil)
row("ISO 8601 timestamp → Date", "\(fmt(formats.iso)) ns", "Foundation ISO8601FormatStyle \(fmt(formats.foundationISO)) ns", "", nil)
if let b = coldStart([batonPath, "run", emptyScript]) {
    let l = coldStart(["lua5.4", emptyScript])
    row("cold start: baton run empty.lua (median of 40)", "\(fmt(b)) ms", l.map { "lua5.4 empty.lua \(fmt($0)) ms" } ?? "lua5.4 not found", "≤ 25 ms", b <= 25)
} else {
    row("cold start: baton run empty.lua", "failed", "", "≤ 25 ms", false)
}
do {
    try networkBench(baton: batonPath)
} catch {
    print("network benchmark failed: \(error)")
}
do {
    try handoffBench(baton: batonPath)
} catch {
    print("handoff benchmark failed: \(error)")
}
do {
    try batchBench(baton: batonPath)
} catch {
    print("batch benchmark failed: \(error)")
}
do {
    try exhaustionBench(baton: batonPath)
} catch {
    print("exhaustion benchmark failed: \(error)")
}
do {
    try brokerBench(baton: batonPath)
} catch {
    print("broker benchmark failed: \(error)")
}
do {
    try brokerHandoffBench(baton: batonPath)
} catch {
    print("broker handoff benchmark failed: \(error)")
}
