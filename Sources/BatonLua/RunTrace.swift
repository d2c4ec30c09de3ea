import BatonCore
import CLuaShim
import Foundation

/// What one run saw and did, as JSON lines in a file (README, "Traces"): every record has the
/// schema version `v`, `seq`, the wall `time` (Unix seconds), `mono` (seconds since the run
/// began, from the monotonic clock), the `run` id, its `kind`, and where it happened: `task`,
/// `parent` (the task that spawned it), and the batch `item` and `attempt` it works for.
/// run.start adds the `trace_id` and the run's `span` (W3C trace context).
/// Message bodies appear only when ``bodies`` is set; nothing else a caller sends does.
/// Confined to the run's event loop; written through a stdio buffer, flushed at the end.
public final class RunTrace: @unchecked Sendable {
    /// The schema version every record carries.
    public static let schemaVersion = 1
    /// The run's id, as in its report.
    public let runID: String
    /// The W3C trace context the run belongs to; its traceparent goes to the agents called.
    public let context: TraceContext
    /// Whether message bodies (sends and their replies) are recorded.
    public let bodies: Bool
    private var file: UnsafeMutablePointer<FILE>?
    private var sequence = 0
    private let start = baton_monotonic_ns()

    /// What the trace knows of each live task: who spawned it, and the item it works for.
    struct TaskLabel {
        var parent: Int?
        var item: String?
        var attempt: Int?
    }
    private var labels: [Int: TaskLabel] = [:]

    /// Opens (truncates) `path`; throws when it cannot be written.
    public init(path: String, runID: String, context: TraceContext, bodies: Bool = false) throws {
        guard let file = fopen(path, "w") else {
            throw HostError.message("cannot write the trace \(path): \(String(cString: strerror(errno)))")
        }
        self.file = file
        self.runID = runID
        self.context = context
        self.bodies = bodies
    }

    /// Writes one record of `kind`, as task `task` did it, with the fields `fill` adds.
    public func record(_ kind: StaticString, task: Int? = nil, _ fill: (inout TraceLine) -> Void = { _ in }) {
        guard let file else { return }
        sequence += 1
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        line.bytes.removeAll(keepingCapacity: true)
        line.raw("{\"v\":1")
        line.field("run", runID)
        line.field("seq", sequence)
        line.field("time", seconds: wall.tv_sec, microseconds: wall.tv_nsec / 1000)
        line.field("mono", Double(baton_monotonic_ns() - start) / 1e9)
        line.field("kind", kind)
        if let task {
            line.field("task", task)
            if let label = labels[task] {
                if let parent = label.parent { line.field("parent", parent) }
                if let item = label.item { line.field("item", item) }
                if let attempt = label.attempt { line.field("attempt", attempt) }
            }
        }
        fill(&line)
        line.raw("}\n")
        line.bytes.withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, file) }
    }

    /// The line being written, kept so that its buffer is reused.
    private var line = TraceLine()

    /// The sequence number of the last record, to pair a call's end with its start.
    public var lastSequence: Int { sequence }

    /// A task was spawned by `parent`; it works for the parent's item until told otherwise.
    func taskSpawned(_ task: Int, parent: Int?, name: String, at: String?) {
        var label = parent.flatMap { labels[$0] } ?? TaskLabel()
        label.parent = parent
        labels[task] = label
        record("task.spawn", task: task) {
            $0.field("name", name)
            if let at { $0.field("at", at) }
        }
    }

    /// A task ended: `ok`, `error` or `cancelled`.
    func taskEnded(_ task: Int, status: String) {
        record("task.end", task: task) { $0.field("status", status) }
        labels[task] = nil
    }

    /// From now on `task` (and the tasks it spawns) works for batch item `item`, attempt
    /// `attempt`.
    public func label(task: Int, item: String, attempt: Int) {
        labels[task, default: TaskLabel()].item = item
        labels[task, default: TaskLabel()].attempt = attempt
    }

    /// An error: its message, class and traceback as frames (file, line, function).
    public func error(task: Int?, message: String, errorClass: String?, traceback: String) {
        let frames = Self.frames(of: traceback)
        record("error", task: task) {
            $0.field("message", message)
            if let errorClass { $0.field("class", errorClass) }
            if !frames.isEmpty { $0.field("traceback", .array(frames)) }
        }
    }

    /// Ends the trace with run.end and closes the file.
    public func finish(exitCode: Int32, outcome: String) {
        record("run.end") {
            $0.field("exit_code", Int(exitCode))
            $0.field("outcome", outcome)
        }
        if let file { fclose(file) }
        file = nil
    }

    /// The frames of a Lua traceback (`\tfile:line: in function 'name'`), innermost first;
    /// frames of C functions and of Baton's own chunks are left out.
    static func frames(of traceback: String) -> [JSON] {
        traceback.split(separator: "\n").compactMap { line -> JSON? in
            let text = line.drop { $0 == "\t" || $0 == " " }
            guard let inRange = text.range(of: ": in ") else { return nil }
            let place = text[..<inRange.lowerBound]
            guard let colon = place.lastIndex(of: ":"), let number = Int(place[place.index(after: colon)...]) else { return nil }
            let file = String(place[..<colon])
            if file.hasPrefix("[") || file.hasPrefix("baton") { return nil }
            var function = String(text[inRange.upperBound...])
            if let open = function.firstIndex(where: { $0 == "'" || $0 == "<" }) {
                function = String(function[open...]).trimmingCharacters(in: CharacterSet(charactersIn: "'<>"))
            }
            return .object([.init("file", .string(file)), .init("line", .int(Int64(number))), .init("function", .string(function))])
        }
    }
}
