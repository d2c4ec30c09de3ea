import BatonCore
import CLuaShim
import Foundation

/// What one run saw and did, as JSON lines in a file (README, "Traces"): every record has the
/// schema version `v`, `seq`, the wall `time` (Unix seconds), `mono` (seconds since the run
/// began, from the monotonic clock), the `run` id and `trace_id`, its `kind`, and where it happened: `task`,
/// `parent` (the task that spawned it), and the batch `item` and `attempt` it works for.
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

    /// What the trace knows of each live task: who spawned it, and the item it works for
    /// (its key as a JSON string, escaped once).
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

    /// Writes one record of `kind` with `fields`, as task `task` did it. The fields every
    /// record has are written by hand: this runs several times for every call a batch makes.
    public func record(_ kind: String, task: Int? = nil, _ fields: [JSON.Member] = []) {
        guard let file else { return }
        sequence += 1
        var line = prefix
        line += #","seq":\#(sequence),"time":\#(Date().timeIntervalSince1970),"#
        line += #""mono":\#(Double(baton_monotonic_ns() - start) / 1e9),"kind":"\#(kind)""#
        if let task {
            line += #","task":\#(task)"#
            if let label = labels[task] {
                if let parent = label.parent { line += #","parent":\#(parent)"# }
                if let item = label.item { line += #","item":\#(item)"# }
                if let attempt = label.attempt { line += #","attempt":\#(attempt)"# }
            }
        }
        if fields.isEmpty {
            line += "}\n"
        } else {
            // The fields as an object, its opening brace replaced by a comma.
            line += ","
            line += JSON.object(fields).serialized().dropFirst()
            line += "\n"
        }
        line.withUTF8 { _ = fwrite($0.baseAddress, 1, $0.count, file) }
    }

    /// `{"v":1,"run":...,"trace_id":...`: what every record starts with.
    private lazy var prefix = #"{"v":\#(Self.schemaVersion),"run":\#(JSON.string(runID).serialized()),"trace_id":"\#(context.traceID)""#

    /// The sequence number of the last record, to pair a call's end with its start.
    public var lastSequence: Int { sequence }

    /// A task was spawned by `parent`; it works for the parent's item until told otherwise.
    func taskSpawned(_ task: Int, parent: Int?, fields: [JSON.Member]) {
        var label = parent.flatMap { labels[$0] } ?? TaskLabel()
        label.parent = parent
        labels[task] = label
        record("task.spawn", task: task, fields)
    }

    /// A task ended: `ok`, `error` or `cancelled`.
    func taskEnded(_ task: Int, status: String) {
        record("task.end", task: task, [.init("status", .string(status))])
        labels[task] = nil
    }

    /// From now on `task` (and the tasks it spawns) works for batch item `item`, attempt
    /// `attempt`.
    public func label(task: Int, item: String, attempt: Int) {
        labels[task, default: TaskLabel()].item = JSON.string(item).serialized()
        labels[task, default: TaskLabel()].attempt = attempt
    }

    /// An error: its message, class and traceback as frames (file, line, function).
    public func error(task: Int?, message: String, errorClass: String?, traceback: String) {
        var fields: [JSON.Member] = [.init("message", .string(message))]
        if let errorClass { fields.append(.init("class", .string(errorClass))) }
        let frames = Self.frames(of: traceback)
        if !frames.isEmpty { fields.append(.init("traceback", .array(frames))) }
        record("error", task: task, fields)
    }

    /// Ends the trace with run.end and closes the file.
    public func finish(exitCode: Int32, outcome: String) {
        record("run.end", [.init("exit_code", .int(Int64(exitCode))), .init("outcome", .string(outcome))])
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
