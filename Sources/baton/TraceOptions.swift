import ArgumentParser
import BatonCore
import BatonLua
import Foundation

/// The trace flags of `baton run` and `baton batch`.
struct TraceOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Write a trace of the run here: one JSON object a line for what it saw and did (read it with baton trace show).",
        valueName: "file"))
    var trace: String?

    @Option(name: .customLong("trace-dir"), help: ArgumentHelp(
        "Keep each run's trace in this folder, named by its start and ending -ok or -failed: the last --trace-keep runs, and apart from them the last --trace-keep failed ones (other files there are left alone).",
        valueName: "dir"))
    var traceDir: String?

    @Option(name: .customLong("trace-keep"), help: ArgumentHelp("How many traces --trace-dir keeps of all runs, and how many more of failed ones.", valueName: "n"))
    var traceKeep = 20

    @Flag(name: .customLong("trace-bodies"), help: "Put the messages sent and the replies received in the trace (left out by default: they may hold what only their devices should see).")
    var traceBodies = false

    func validate() throws {
        if trace != nil && traceDir != nil { throw ValidationError("Give --trace FILE or --trace-dir DIR, not both.") }
        guard traceKeep >= 1, traceKeep <= 100_000 else { throw ValidationError("Invalid --trace-keep \(traceKeep): use 1 to 100000.") }
        if traceBodies && trace == nil && traceDir == nil { throw ValidationError("--trace-bodies goes with --trace FILE or --trace-dir DIR.") }
    }

    /// The run's trace context: a child of `TRACEPARENT` when the environment has a valid one.
    static func context() -> TraceContext {
        TraceContext(continuing: ProcessInfo.processInfo.environment["TRACEPARENT"])
    }

    /// Whether `name` is one --trace-dir makes: `2026-11-24T030000.123Z-RUNID.jsonl`, the run
    /// id a UUID, ending `-ok` or `-failed` once settled.
    static func isTraceName(_ name: String) -> Bool {
        let hex = "[0-9a-f]"
        let uuid = "\(hex){8}-\(hex){4}-\(hex){4}-\(hex){4}-\(hex){12}"
        let pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{6}\\.[0-9]{3}Z-\(uuid)(-ok|-failed)?\\.jsonl$"
        return name.range(of: pattern, options: .regularExpression) != nil
    }

    /// Where this run's trace is being written, or nil without --trace and --trace-dir.
    func path(runID: String, started: Date) -> String? {
        if let trace { return trace }
        guard let traceDir else { return nil }
        let stamp = ISO8601.format(started, alwaysMilliseconds: true).replacingOccurrences(of: ":", with: "")
        return "\(traceDir)/\(stamp)-\(runID).jsonl"
    }

    /// Opens the trace, or says in one line why it cannot and exits 2.
    func open(runID: String, context: TraceContext, format: LogFormat) -> (RunTrace, String)? {
        guard let path = path(runID: runID, started: Date()) else { return nil }
        do {
            if let traceDir { try FileManager.default.createDirectory(atPath: traceDir, withIntermediateDirectories: true) }
            return (try RunTrace(path: path, runID: runID, context: context, bodies: traceBodies), path)
        } catch {
            FailureReport.write(message: "cannot write the trace: \(error)", format: format)
            Baton.exitProcess(2)
        }
    }

    /// With --trace-dir, names the finished trace at `path` -ok or -failed by `exitCode`, and
    /// keeps the newest --trace-keep traces and, apart from them, the newest --trace-keep
    /// failed ones (a trace without an ending, left by a killed run, counts as failed). Only
    /// names --trace-dir makes are counted or removed: other files in the folder are left be.
    func settle(path: String, exitCode: Int32) {
        guard let traceDir else { return }
        let ending = exitCode == 0 ? "-ok.jsonl" : "-failed.jsonl"
        try? FileManager.default.moveItem(atPath: path, toPath: String(path.dropLast(".jsonl".count)) + ending)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: traceDir) else { return }
        // Names start with the UTC start time: newest last.
        let traces = names.filter(Self.isTraceName).sorted()
        let failed = traces.filter { !$0.hasSuffix("-ok.jsonl") }
        let kept = Set(traces.suffix(traceKeep)).union(failed.suffix(traceKeep))
        for name in traces where !kept.contains(name) {
            try? FileManager.default.removeItem(atPath: "\(traceDir)/\(name)")
        }
    }
}
