// The batch figures: `baton batch` launching over a fleet of real agents on loopback, beside
// the same launches as a shell loop of `baton launch`, as GNU parallel running `baton launch`,
// and as a Lua loop of `baton.launch` in one `baton run`.
import BatonClient
import BatonCore
import CLuaShim
import Foundation

/// 1,000 launches (BATON_BENCH_BATCH_ITEMS) over 10 agents, one item a launch, with `baton
/// batch --jobs` 1, 8 and 64 (best of 3 rounds each), a shell loop of `baton launch` (one
/// process a launch, in turn) and `parallel --will-cite -j 8 baton launch` (one round each:
/// they take a thousand process starts); the per-item cost at `--jobs 1` (the slope between a
/// tenth of the items and all of them, so one run's fixed costs cancel out) beside a bare round trip (a Lua loop of `baton.launch` in one `baton run`); and
/// what `--trace FILE` costs at `--jobs 64` (best of 15 rounds each way, interleaved: a run is ~30 ms, and the
/// machine's noise is a few), once `baton
/// batch --help` offers it.
func batchBench(baton: String) throws {
    let count = max(10, Int(ProcessInfo.processInfo.environment["BATON_BENCH_BATCH_ITEMS"] ?? "") ?? 1000)
    var agents: [AgentProcess] = []
    defer { agents.forEach { $0.stop() } }
    for _ in 0..<10 { agents.append(try AgentProcess(baton: baton, insecure: true)) }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("baton-bench-batch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    func file(_ name: String) -> String { folder.appendingPathComponent(name).path }

    // Item i goes to agent i mod 10; the agents' launch function answers success.
    let targets = (0..<count).map { (agents[$0 % agents.count].address.description, "bench:item-\($0)") }
    try targets.enumerated().map { #"{"key": "item-\#($0.offset)", "agent": "\#($0.element.0)"}"# }
        .joined(separator: "\n").appending("\n").write(toFile: file("items.jsonl"), atomically: true, encoding: .utf8)
    try targets.map { "\($0.0) \($0.1)" }.joined(separator: "\n").appending("\n")
        .write(toFile: file("launches.txt"), atomically: true, encoding: .utf8)
    try #"""
        function job(item, ctx)
          baton.check(baton.launch(item.agent, "bench:" .. ctx.key, { app = "bench" }))
        end
        """#.write(toFile: file("job.lua"), atomically: true, encoding: .utf8)
    // The same launches, in turn, in one process: one to each agent first (its connection),
    // then every launch timed as a whole.
    try #"""
        local list = ...
        local launches = {}
        for line in io.lines(list) do
          local address, uri = line:match("^(%S+) (%S+)$")
          launches[#launches + 1] = { address, uri }
        end
        for i = 1, math.min(10, #launches) do baton.check(baton.launch(launches[i][1], launches[i][2], { app = "bench" })) end
        local t0 = baton.now()
        for _, l in ipairs(launches) do baton.check(baton.launch(l[1], l[2], { app = "bench" })) end
        print((baton.now() - t0) / #launches)
        """#.write(toFile: file("loop.lua"), atomically: true, encoding: .utf8)
    try #"""
        while read -r address uri; do
          "$1" launch --insecure --no-mdns "$address" "$uri" --app bench >/dev/null || exit 1
        done < "$2"
        """#.write(toFile: file("loop.sh"), atomically: true, encoding: .utf8)

    let batch = [baton, "batch", file("job.lua"), "--input", file("items.jsonl"), "--insecure", "--no-mdns"]
    func batchMs(jobs: Int, rounds: Int = 3, extra: [String] = []) throws -> Double {
        var best = Double.infinity
        for _ in 0..<rounds { best = min(best, try wallMs(batch + ["--jobs", "\(jobs)"] + extra, folder: folder)) }
        return best
    }
    let n = "\(count)"
    let jobs1 = try batchMs(jobs: 1), jobs8 = try batchMs(jobs: 8), jobs64 = try batchMs(jobs: 64)
    let loop = try wallMs(["bash", file("loop.sh"), baton, file("launches.txt")], folder: folder)
    row("batch: \(n) launches, 10 agents, --jobs 1", "\(fmt(jobs1)) ms", "shell loop of baton launch \(fmt(loop)) ms (\(fmt(loop / jobs1))×)", "", nil)
    if let parallel = findExecutable("parallel") {
        let gnu = try wallMs([parallel, "--will-cite", "-j", "8", "--halt", "now,fail=1", "--colsep", " ",
                              baton, "launch", "--insecure", "--no-mdns", "{1}", "{2}", "--app", "bench", "::::", file("launches.txt")],
                             folder: folder)
        row("batch: \(n) launches, 10 agents, --jobs 8", "\(fmt(jobs8)) ms", "GNU parallel -j 8 baton launch \(fmt(gnu)) ms (\(fmt(gnu / jobs8))×)", "", nil)
    } else {
        row("batch: \(n) launches, 10 agents, --jobs 8", "\(fmt(jobs8)) ms", "GNU parallel not installed", "", nil)
    }
    row("batch: \(n) launches, 10 agents, --jobs 64", "\(fmt(jobs64)) ms", "\(fmt(jobs1 / jobs64))× faster than --jobs 1", "", nil)

    // Per item: the slope between a tenth of the items and all of them, so that what a run
    // costs once (the process, loading, connecting to each agent) cancels out.
    let few = max(10, count / 10)
    let lines = try String(contentsOfFile: file("items.jsonl"), encoding: .utf8).split(separator: "\n").prefix(few)
    try (lines.joined(separator: "\n") + "\n").write(toFile: file("few.jsonl"), atomically: true, encoding: .utf8)
    var fewMs = Double.infinity
    for _ in 0..<3 {
        fewMs = min(fewMs, try wallMs([baton, "batch", file("job.lua"), "--input", file("few.jsonl"), "--insecure", "--no-mdns", "--jobs", "1"], folder: folder))
    }
    let bare = try bareLaunchMicroseconds(baton: baton, script: file("loop.lua"), list: file("launches.txt"), folder: folder)
    let perItem = (jobs1 - fewMs) * 1000 / Double(count - few)
    row("  per item at --jobs 1 (\(count) vs \(few) items)", "\(fmt(perItem)) µs", "Lua loop of baton.launch \(fmt(bare)) µs (\(fmt(perItem / bare, 2))×)", "≤ 1.5×", perItem <= 1.5 * bare)

    // --trace: only once `baton batch` has it, as an option (its help's prose may name it as
    // a thing to come).
    let help = try output([baton, "batch", "--help"], folder: folder)
    guard help.split(separator: "\n").contains(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--trace <") }) else {
        row("  --trace FILE at --jobs 64", "n/a (no --trace yet)", "", "≤ 5%", nil)
        return
    }
    var plain = Double.infinity, traced = Double.infinity
    for _ in 0..<15 {
        plain = min(plain, try batchMs(jobs: 64, rounds: 1))
        try? FileManager.default.removeItem(atPath: file("trace.out"))
        traced = min(traced, try batchMs(jobs: 64, rounds: 1, extra: ["--trace", file("trace.out")]))
    }
    let cost = (traced / plain - 1) * 100
    row("  --trace FILE at --jobs 64: cost", "\(cost < 0 ? "−" : "+")\(fmt(abs(cost)))%", "untraced \(fmt(plain)) ms, traced \(fmt(traced)) ms", "≤ 5%", cost <= 5)
}

/// The wall time of one run of `argv`, in ms; its standard output and error go to files in
/// `folder`, and one that fails throws, quoting its standard error.
private func wallMs(_ argv: [String], folder: URL) throws -> Double {
    let t0 = baton_monotonic_ns()
    try runChild(argv, folder: folder)
    return Double(baton_monotonic_ns() - t0) / 1e6
}

/// What `argv` printed to standard output (it must succeed).
private func output(_ argv: [String], folder: URL) throws -> String {
    try runChild(argv, folder: folder)
    return (try? String(contentsOfFile: folder.appendingPathComponent("child.out").path, encoding: .utf8)) ?? ""
}

private func runChild(_ argv: [String], folder: URL) throws {
    let out = folder.appendingPathComponent("child.out").path, err = folder.appendingPathComponent("child.err").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let cargs = argv.map { strdup($0) } + [nil]
    defer { cargs.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, argv[0], &actions, nil, cargs, environ)
    guard rc == 0 else { throw BenchError("cannot start \(argv[0]): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    guard status == 0 else {
        let text = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        throw BenchError("\(argv.prefix(3).joined(separator: " ")) … failed (wait status \(status)): \(text.suffix(600))")
    }
}

/// A bare launch round trip, in µs: the Lua loop's own figure, best of 3 runs.
private func bareLaunchMicroseconds(baton: String, script: String, list: String, folder: URL) throws -> Double {
    var best = Double.infinity
    for _ in 0..<3 {
        let text = try output([baton, "run", "--insecure", "--no-mdns", script, list], folder: folder)
        guard let seconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("the launch loop printed \(text)")
        }
        best = min(best, seconds * 1e6)
    }
    return best
}

private func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}
