import BatonCore
import CLuaShim
import Foundation
import NIOCore
import Synchronization

/// What one run saw and did, as JSON lines in a file (README, "Traces"): every record has the
/// schema version `v`, `seq`, the wall `time` (Unix seconds), `mono` (seconds since the run
/// began, from the monotonic clock), the `run` id, its `kind`, and where it happened: `task`,
/// `parent` (the task that spawned it), and the batch `item` and `attempt` it works for.
/// run.start adds the `trace_id` and the run's `span` (W3C trace context).
/// Message bodies appear only when ``bodies`` is set; nothing else a caller sends does.
/// Confined to the run's event loop; lines are gathered in a buffer and written by a thread of
/// the trace's own in large writes, at least every ``flushInterval``.
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
    /// The number of the last record, to pair a call's end with its start.
    private(set) var sequence = 0
    private let start = baton_monotonic_ns()
    private let wallStart: Int64 = {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        return Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec)
    }()

    /// What the trace knows of a task (kept on the task): who spawned it, and the item it
    /// works for.
    struct TaskLabel {
        var parent: Int?
        var item: String?
        var attempt: Int?
    }

    /// Opens (truncates) `path`; throws when it cannot be written.
    public init(path: String, runID: String, context: TraceContext, bodies: Bool = false) throws {
        guard let file = fopen(path, "w") else {
            throw HostError.message("cannot write the trace \(path): \(String(cString: strerror(errno)))")
        }
        self.file = file
        self.runID = runID
        var opening = TraceLine(capacity: 128)
        opening.raw("{\"v\":1")
        opening.field("run", runID)
        prefix = opening.withBytes { Array($0) }
        opening.deallocate()
        self.context = context
        self.bodies = bodies
    }

    /// Writes one record of `kind`, as task `task` did it, with the fields `fill` adds.
    func record(_ kind: StaticString, task: LuaTask? = nil, _ fill: (inout TraceLine) -> Void = { _ in }) {
        guard file != nil else { return }
        sequence += 1
        prefix.withUnsafeBytes { line.raw($0) }
        line.field("seq", sequence)
        let now = baton_monotonic_ns()
        // The wall clock as it was at the start, moved on by the monotonic clock: one clock
        // read a record.
        let wall = wallStart + (now - start)
        line.field("time", seconds: Int(wall / 1_000_000_000), microseconds: Int(wall % 1_000_000_000) / 1000)
        line.field("mono", Double(now - start) / 1e9)
        line.field("kind", kind)
        if let task {
            line.field("task", task.id)
            if let label = task.traceLabel {
                if let parent = label.parent { line.field("parent", parent) }
                if let item = label.item { line.field("item", item) }
                if let attempt = label.attempt { line.field("attempt", attempt) }
            }
        }
        fill(&line)
        line.raw("}\n")
        // Out in big writes, and at least every flush interval: a run killed with -9 leaves
        // its trace up to its last moments.
        if line.count >= Self.flushAt || now - flushed > Self.flushInterval.nanoseconds {
            flush()
            flushed = now
        }
    }

    /// The longest lines wait before they are written out, a record coming or not (the run
    /// calls ``flushIfPending()`` this often): what a run killed with -9 loses at most, while
    /// its loop is not stuck.
    public static let flushInterval: TimeAmount = .milliseconds(200)

    /// Hands what is gathered to the writer. On the run's loop.
    func flushIfPending() {
        guard file != nil, line.count > 0 else { return }
        flush()
        flushed = baton_monotonic_ns()
    }

    private var flushed = baton_monotonic_ns()

    /// The lines written and not yet in the file: they go out in writes of about this size.
    private var line = TraceLine(capacity: 80 << 10)
    private static let flushAt = 64 << 10

    /// Hands the lines gathered to the writer, a thread of the trace's own: the file's writes
    /// never hold up the event loop.
    private func flush() {
        guard let file, line.count > 0 else { return }
        let full = Filled(line: line, file: file)
        line = TraceLine(capacity: 80 << 10)
        handedOver = true
        let failure = self.failure
        writer.async {
            let written = full.line.withBytes { fwrite($0.baseAddress, 1, $0.count, full.file) == $0.count }
            if !written || fflush(full.file) != 0 { failure.note(errno) }
            full.line.deallocate()
        }
    }

    private lazy var writer = DispatchQueue(label: "baton.trace")
    /// Whether anything went to the writer: a short run's trace is written at its end, on the
    /// loop, without a thread.
    private var handedOver = false

    /// A buffer of lines on its way to the file; the writer owns it from then on.
    private struct Filled: @unchecked Sendable {
        let line: TraceLine
        let file: UnsafeMutablePointer<FILE>
    }
    /// Why the trace could not be written in full (a full disk), once it could not; nil while
    /// every write went through. Read it after ``finish(exitCode:outcome:)``.
    public var writeFailure: String? { failure.text.withLock { $0 } }
    private let failure = WriteFailure()

    /// The first write error, noted by whichever thread met it.
    private final class WriteFailure: Sendable {
        let text = Mutex<String?>(nil)
        func note(_ code: Int32) {
            let message = String(cString: strerror(code))
            text.withLock { $0 = $0 ?? message }
        }
    }

    /// `{"v":1,"run":"..."`, which every record starts with.
    private let prefix: [UInt8]

    /// A task was spawned by `parent`; it works for the parent's item until told otherwise.
    /// `name` is nil for a task the script spawned (its id names it).
    func taskSpawned(_ task: LuaTask, parent: LuaTask?, name: String?, at: String?) {
        var label = parent?.traceLabel ?? TaskLabel()
        label.parent = parent?.id
        task.traceLabel = label
        record("task.spawn", task: task) {
            if let name { $0.field("name", name) }
            if let at { $0.field("at", at) }
        }
    }

    /// A task ended: `ok`, `error` or `cancelled`.
    func taskEnded(_ task: LuaTask, status: String) {
        record("task.end", task: task) { $0.field("status", status) }
    }

    /// From now on `task` (and the tasks it spawns) works for batch item `item`, attempt
    /// `attempt`.
    func label(task: LuaTask, item: String, attempt: Int) {
        task.traceLabel = TaskLabel(parent: task.traceLabel?.parent, item: item, attempt: attempt)
    }

    /// An error: its message, class and traceback as frames (file, line, function).
    func error(task: LuaTask?, message: String, errorClass: String?, traceback: String) {
        let frames = Self.frames(of: traceback)
        record("error", task: task) {
            $0.field("message", message)
            if let errorClass { $0.field("class", errorClass) }
            if !frames.isEmpty { $0.field("traceback", .array(frames)) }
        }
    }

    /// Ends the trace with run.end and closes the file.
    func finish(exitCode: Int32, outcome: String) {
        record("run.end") {
            $0.field("exit_code", Int(exitCode))
            $0.field("outcome", outcome)
        }
        if let file, !handedOver {
            // All of it still here: written now, and no thread was needed.
            let written = line.withBytes { fwrite($0.baseAddress, 1, $0.count, file) == $0.count }
            if !written { failure.note(errno) }
            if fclose(file) != 0 { failure.note(errno) }
        } else if let file {
            flush()
            let closing = Filled(line: line, file: file)
            let failure = self.failure
            // What is queued is written before the run's end is reported.
            writer.sync { if fclose(closing.file) != 0 { failure.note(errno) } }
        }
        file = nil
        line.deallocate()
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
