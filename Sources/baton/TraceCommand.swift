import ArgumentParser
import BatonCore
import Foundation

/// `baton trace`: reading the traces `baton run --trace` and `baton batch --trace` write.
struct TraceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Read the traces runs write.",
        discussion: """
            `baton run --trace FILE` and `baton batch --trace FILE` write one JSON object a \
            line (see the README, "Traces"); jq reads them as they are, and `baton trace show` \
            prints them as a tree.
            """,
        subcommands: [Show.self]
    )

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print a trace as a tree of tasks and calls, with durations and failures marked.",
            discussion: """
                Each task is a branch under the task that spawned it, with its batch item and \
                attempt; under it, in order, its calls (name, device, status, duration), the \
                tasks it spawned, its retries, logs and errors (with the frames of their \
                tracebacks). A call that failed, a task that failed or was cancelled, and an \
                error are marked ✗; a call that never ended (the run was killed, or the task \
                cancelled) is marked unfinished.

                Examples:
                  baton trace show run.jsonl
                  baton trace show --failures batch.jsonl

                A trace cut short (its run killed while writing, a full disk) is shown up to \
                its last whole line, and the output ends saying where it was cut.

                Exit codes: 0 shown; 1 the trace shows a failed run, or is cut; 2 usage, or a \
                file that is not a trace (empty, or its first line not a trace record).
                """
        )

        @Argument(help: ArgumentHelp("A trace file.", valueName: "file"))
        var file: String

        @Flag(help: "Show only the branches that hold a failure.")
        var failures = false

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                StandardError.write("cannot read \(file)\n")
                Baton.exitProcess(2)
            }
            let read = TraceFile.read([UInt8](data))
            if let problem = read.notATrace {
                StandardError.write("\(file)\(problem): is this a trace?\n")
                Baton.exitProcess(2)
            }
            let tree = TraceTree(read.records)
            var shown = tree.render(failuresOnly: failures)
            if let cut = read.cutAtLine {
                shown += "✗ cut at line \(cut): what follows is torn or missing (the run was killed while writing, or its disk was full); shown up to it\n"
            }
            print(shown, terminator: "")
            Baton.exitProcess(tree.failed || read.cutAtLine != nil ? 1 : 0)
        }
    }
}

/// A trace file's records, read up to a tear.
struct TraceFile {
    /// The records before the tear (all of them when there is none).
    var records: [[String: JSON]] = []
    /// The line (from 1) where the trace is cut: the first that is not a whole record.
    var cutAtLine: Int?
    /// Why the file is not a trace at all (`:1: not a JSON object`), or nil.
    var notATrace: String?

    /// A trace is JSON objects one a line, each with `v`, `run` and `kind`. The first must be
    /// one; a later line that is not (a record cut short) ends what is shown.
    static func read(_ bytes: [UInt8]) -> TraceFile {
        var result = TraceFile()
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard !lines.isEmpty else {
            result.notATrace = ": empty"
            return result
        }
        for (number, line) in lines.enumerated() {
            guard case .object(let members)? = try? JSON.parse(line), let record = Self.record(members) else {
                if number == 0 {
                    result.notATrace = ":1: not a JSON object with v, run and kind"
                } else {
                    result.cutAtLine = number + 1
                }
                return result
            }
            result.records.append(record)
        }
        return result
    }

    private static func record(_ members: [JSON.Member]) -> [String: JSON]? {
        let record = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        guard case .int? = record["v"], case .string? = record["run"], case .string? = record["kind"] else { return nil }
        return record
    }
}

/// A trace's records arranged by task, for `baton trace show`.
struct TraceTree {
    private var records: [[String: JSON]]
    /// Each task's records in order (calls by their end, joined to their start), by task id.
    private var byTask: [Int64: [[String: JSON]]] = [:]
    private var children: [Int64: [Int64]] = [:]
    private var spawn: [Int64: [String: JSON]] = [:]
    private var taskEnd: [Int64: String] = [:]
    private var callEnds: [Int64: [String: JSON]] = [:]
    private(set) var failed = false

    init(_ records: [[String: JSON]]) {
        self.records = records
        for r in records {
            let kind = r.string("kind")
            switch kind {
            case "task.spawn":
                if let task = r.int("task") {
                    spawn[task] = r
                    if let parent = r.int("parent") { children[parent, default: []].append(task) }
                }
            case "task.end":
                if let task = r.int("task") { taskEnd[task] = r.string("status") }
            case "call.end":
                if let start = r.int("start") { callEnds[start] = r }
            case "run.end":
                failed = (r.int("exit_code") ?? 0) != 0
            default:
                break
            }
            if let task = r.int("task"), kind != "task.spawn", kind != "task.end", kind != "call.end" {
                byTask[task, default: []].append(r)
            }
        }
    }

    func render(failuresOnly: Bool) -> String {
        var out = ""
        let start = records.first { $0.string("kind") == "run.start" }
        let end = records.last { $0.string("kind") == "run.end" }
        var head = "run \(start?.string("run") ?? records.first?.string("run") ?? "?")"
        if let trace = start?.string("trace_id") { head += "  trace \(trace)" }
        if let script = start?.string("script") { head += "  \(script)" }
        if let end {
            head += "  exit \(end.int("exit_code") ?? 0) (\(end.string("outcome") ?? "?"))  \(Self.duration(end.double("mono")))"
            if failed { head += "  ✗" }
        } else {
            head += "  unfinished (no run.end: the run was killed, or is still going)  ✗"
        }
        out += head + "\n"
        // Events and records of no task (watcher events, run-level logs).
        for r in records where r.int("task") == nil && r.string("kind") == "event" {
            out += "  event \(r.string("event") ?? "?") \(r.string("device") ?? "")\n"
        }
        let roots = spawn.keys.filter { spawn[$0]?.int("parent") == nil }.sorted()
        for root in roots where !failuresOnly || hasFailure(root) {
            renderTask(root, indent: "  ", into: &out, failuresOnly: failuresOnly)
        }
        return out
    }

    private func taskFailed(_ task: Int64) -> Bool {
        let status = taskEnd[task]
        return status == "error" || status == "cancelled"
    }

    private func hasFailure(_ task: Int64) -> Bool {
        if taskFailed(task) { return true }
        for r in byTask[task] ?? [] {
            if r.string("kind") == "error" { return true }
            if r.string("kind") == "call.start", let seq = r.int("seq"), callFailed(callEnds[seq]) { return true }
        }
        return (children[task] ?? []).contains(where: hasFailure)
    }

    private func callFailed(_ end: [String: JSON]?) -> Bool {
        guard let end else { return true }
        return !["success", "nil", "completed"].contains(end.string("status") ?? "")
    }

    /// "item K attempt N" for a record that says which item it works for, else nil.
    private static func itemLabel(_ r: [String: JSON]?) -> String? {
        guard let r, let item = r.string("item") else { return nil }
        return "item \(item)" + (r.int("attempt").map { " attempt \($0)" } ?? "")
    }

    private enum Entry {
        case record([String: JSON])
        case child(Int64)
    }

    private func renderTask(_ task: Int64, indent: String, into out: inout String, failuresOnly: Bool) {
        let s = spawn[task] ?? [:]
        // This task's own records and its children, in the order they happened.
        var entries: [(seq: Int64, entry: Entry)] = (byTask[task] ?? []).map { ($0.int("seq") ?? 0, .record($0)) }
        entries += (children[task] ?? []).map { (spawn[$0]?.int("seq") ?? 0, .child($0)) }
        entries.sort { $0.seq < $1.seq }
        func label(_ entry: Entry) -> String? {
            switch entry {
            case .record(let r): Self.itemLabel(r)
            case .child(let id): Self.itemLabel(spawn[id])
            }
        }
        // A task that works for one item says so in its line; a batch's worker, which takes
        // item after item, gets a line for each item it works on.
        let labels = Set(entries.compactMap { label($0.entry) })
        var heading = "\(indent)task \(task)"
        if let name = s.string("name"), name != "task \(task)" { heading += " \(name)" }
        if let at = s.string("at") { heading += " (at \(at))" }
        if labels.count == 1, let only = labels.first { heading += "  \(only)" }
        let spawned = s.double("mono")
        let ended = records.last { $0.string("kind") == "task.end" && $0.int("task") == task }
        if let spawned, let endMono = ended?.double("mono") { heading += "  \(Self.duration(endMono - spawned))" }
        switch taskEnd[task] {
        case "error": heading += "  ✗ failed"
        case "cancelled": heading += "  ✗ cancelled"
        case nil: heading += "  unfinished"
        default: break
        }
        out += heading + "\n"

        var current: String?
        var header: String?
        for (_, entry) in entries {
            var inner = indent + "  "
            if labels.count > 1, let here = label(entry) {
                if here != current {
                    current = here
                    header = "\(inner)\(here)\n"
                }
                inner += "  "
            }
            // An item's header goes out with the first line under it (in --failures, if any).
            var text = ""
            switch entry {
            case .child(let id):
                if !failuresOnly || hasFailure(id) { renderTask(id, indent: inner, into: &text, failuresOnly: failuresOnly) }
            case .record(let r):
                text = self.line(for: r, inner: inner, failuresOnly: failuresOnly)
            }
            guard !text.isEmpty else { continue }
            if let pending = header {
                out += pending
                header = nil
            }
            out += text
        }
    }

    /// The line (or lines) a record of a task makes; empty for one not shown.
    private func line(for r: [String: JSON], inner: String, failuresOnly: Bool) -> String {
        switch r.string("kind") {
        case "call.start":
            let end = r.int("seq").flatMap { callEnds[$0] }
            if failuresOnly && !callFailed(end) { return "" }
            var text = "\(inner)\(r.string("call") ?? "call")"
            if let device = r.string("device") { text += " \(device)" }
            if let service = r.string("service") { text += " \(service)" }
            if let end {
                text += "  \(end.string("status") ?? "?")  \(Self.duration(end.double("duration")))"
                if callFailed(end) { text += "  ✗" }
                if let error = end.string("error") { text += "  \(error)" }
            } else {
                text += "  unfinished  ✗"
            }
            return text + "\n"
        case "error":
            var text = "\(inner)✗ error\(r.string("class").map { " (\($0))" } ?? ""): \(r.string("message") ?? "")\n"
            if case .array(let frames)? = r["traceback"] {
                for case .object(let members) in frames {
                    let f = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
                    let place = "\(f.string("file") ?? "?"):\(f.int("line") ?? 0)"
                    let function = f.string("function").map { $0.contains(":") ? "" : " in \($0)" } ?? ""
                    text += "\(inner)    at \(place)\(function)\n"
                }
            }
            return text
        case "verify" where !failuresOnly:
            let said = r.string("error").map { "✗ \($0)" } ?? (r.bool("done") == true ? "done" : "not done")
            return "\(inner)verify \(r.string("item") ?? "?")  \(said)\n"
        case "retry" where !failuresOnly:
            return "\(inner)retry \(r.string("item") ?? "") after attempt \(r.int("attempt") ?? 0) (\(r.string("class") ?? "?")), pause \(Self.duration(r.double("pause")))\n"
        case "log" where !failuresOnly:
            return "\(inner)log \(r.string("level") ?? ""): \(r.string("message") ?? "")\n"
        case "event" where !failuresOnly:
            return "\(inner)event \(r.string("event") ?? "?") \(r.string("device") ?? "")\n"
        default:
            return ""
        }
    }

    static func duration(_ seconds: Double?) -> String {
        guard let seconds else { return "?" }
        if seconds < 0.001 { return String(format: "%.0f µs", seconds * 1e6) }
        if seconds < 1 { return String(format: "%.1f ms", seconds * 1e3) }
        return String(format: "%.3f s", seconds)
    }
}

extension Dictionary where Key == String, Value == JSON {
    fileprivate func string(_ key: String) -> String? {
        if case .string(let s)? = self[key] { return s }
        return nil
    }
    fileprivate func bool(_ key: String) -> Bool? {
        if case .bool(let b)? = self[key] { return b }
        return nil
    }
    fileprivate func int(_ key: String) -> Int64? {
        if case .int(let i)? = self[key] { return i }
        return nil
    }
    fileprivate func double(_ key: String) -> Double? {
        switch self[key] {
        case .double(let d)?: return d
        case .int(let i)?: return Double(i)
        default: return nil
        }
    }
}
