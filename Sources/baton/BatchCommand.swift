import ArgumentParser
import BatonCore
import Crypto
import BatonLua
import BatonNet
import Foundation
import Logging
import NIOPosix

/// `baton batch`: runs a script's `job(item, ctx)` for every item of an input file.
struct BatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Run a script's job(item, ctx) for every item of a job list, concurrently, with retries and a report.",
        discussion: """
            SCRIPT defines `function job(item, ctx)`. The items come from --input: a JSON \
            array, JSON lines (one object a line), or CSV with a header (by the .csv \
            extension; every field a string). Each item's key is its --key field (default \
            `key`, then `id`), else its position; keys must be unique. `ctx` has `key`, \
            `attempt`, `batch` (the batch's id), `idempotency_key` (batch/key: what \
            baton.handoff's key takes), `log`, `device` (set it to name the item's device in \
            the report) and `ctx:changed()` (the item changed something, as against found it \
            done).

            Items run --jobs at a time as tasks on one loop (not processes). An item that \
            raises an error of a class in --retry-on (default: unavailable and timeout; never \
            not_found, denied or a script error) is tried again, up to --retries more times, \
            after an exponential backoff with jitter (--backoff MIN..MAX) during which other \
            items run. --item-timeout cancels an item at its deadline (class timeout). The \
            script's memory is capped at 1G.

            Stopping early: --halt soon,fail=N starts nothing new once N items failed \
            (now,fail=N also cancels the running ones; N may be a percentage); --timeout \
            stops the whole batch. SIGINT or SIGTERM starts nothing new and gives the running \
            items --grace to finish; a second signal cancels them. Items never started are \
            not_run; items cancelled mid-way are in doubt.

            The report (--report FILE, JSON): the batch and run ids, the script and input \
            with their SHA-256, the command line, host, version, start, end, duration, status \
            (succeeded, succeeded_with_failures, failed, halted, timed_out, cancelled, \
            journal_failed), the \
            exit code, the policy, the counts (total, succeeded, changed, failed, skipped, \
            in_doubt, not_run, retried), the failures by class, every item (key, status, \
            attempts, start, duration, device, changed, error with class, message, traceback \
            and retryable), and with a journal the command that runs what is left. A summary \
            goes to stderr, and progress while it runs: a bar on a terminal (NO_COLOR \
            honoured), a line every 5 s elsewhere, none with -q.

            --journal DIR keeps DIR/journal.jsonl: a header (the batch id, the script's and \
            input's SHA-256, the policy; created exclusively and fsynced), then for each item \
            a start record, written and fsynced before the item runs, and an end record. A \
            runner holds DIR/journal.lock (a kernel lock) while it uses the journal: a second \
            runner on it (a cron overlap, a --resume while the first still runs) exits 75 \
            naming the holder's pid, host and start. A journal whose first line is not a \
            valid header is refused; a torn last line (a runner killed mid-write) is cut \
            before anything is appended, and a damaged line in the middle is refused unless \
            --force. A journal or report that cannot be written (a full disk) fails the \
            batch: nothing new starts, the error is said on stderr, and it exits 74. --resume continues that batch \
            by item key: items that ended are skipped, the rest run; it refuses when the \
            script or the input changed (unless --force). --retry-failed also runs again the \
            items that failed. An item that started and never ended (the runner was killed) \
            or was cancelled is in doubt: --in-doubt retry (the default; jobs are meant to be \
            idempotent) runs it again, skip leaves it and counts it, check asks the script's \
            verify(item, ctx) whether its work is done (true: counted as succeeded; else it \
            runs again).

            --trace FILE writes what the batch saw and did (see baton run --help and baton \
            trace show); each item's calls carry its key and attempt.

            Examples:
              baton batch handoff.lua --input handoffs.json --report r.json
              baton batch move.lua --input s.json --jobs 8 --retries 3 --journal j
              baton batch launch.lua --input tvs.csv --key name --tolerate 5%

            Exit codes: 0 every item succeeded, or the failures are within --tolerate \
            (default 0); 4 more failed than that, or --halt stopped it; 3 --timeout; 130, \
            143 SIGINT, SIGTERM; 2 usage, an input or script that does not load, or a \
            journal that cannot be used (no valid header, a changed script or input); 74 the \
            journal or the report could not be written; 75 another runner holds the journal.
            """
    )

    @Argument(help: ArgumentHelp("The script defining job(item, ctx).", valueName: "script"))
    var script: String

    @Option(help: ArgumentHelp("The job list: a JSON array, JSON lines, or CSV with a header (.csv).", valueName: "file"))
    var input: String

    @Option(help: ArgumentHelp("The item field that is its key (default key, then id; else its position).", valueName: "field"))
    var key: String?

    @Option(help: ArgumentHelp("How many items run at once.", valueName: "n"))
    var jobs = 4

    @Option(help: ArgumentHelp("How many more times a failed item is tried (only for --retry-on classes).", valueName: "n"))
    var retries = 0

    @Option(name: .customLong("retry-on"), help: ArgumentHelp(
        "The error classes worth a retry, comma-separated: unavailable,timeout (the default); also lock_held, script.",
        valueName: "classes"))
    var retryOn = "unavailable,timeout"

    @Option(help: ArgumentHelp("The pause before a retry, doubling from MIN up to MAX, with jitter: 100ms..5s.", valueName: "min..max"))
    var backoff = "100ms..5s"

    @Option(name: .customLong("item-timeout"), help: ArgumentHelp("Cancel an item that runs longer: 30s, 2m.", valueName: "duration"))
    var itemTimeout: String?

    @Option(help: ArgumentHelp("How many failed items still make a success: a count, or a percentage like 5%.", valueName: "n|p%"))
    var tolerate = "0"

    @Option(help: ArgumentHelp(
        "Stop early once this many items failed: soon,fail=N (start no new item) or now,fail=N (and cancel the running ones); N a count or a percentage.",
        valueName: "when,fail=n|p%"))
    var halt: String?

    @Option(help: ArgumentHelp("Stop the whole batch after this long: running items are cancelled, the rest not run (exit 3).", valueName: "duration"))
    var timeout: String?

    @Option(help: ArgumentHelp("After SIGINT or SIGTERM, how long running items get to finish before they are cancelled (a second signal cancels them at once).", valueName: "duration"))
    var grace = "10s"

    @Option(help: ArgumentHelp("Write the JSON report here.", valueName: "file"))
    var report: String?

    @Option(help: ArgumentHelp("Keep a journal in this folder: each item's start (fsynced before it runs) and end, for --resume.", valueName: "dir"))
    var journal: String?

    @Flag(help: "Continue the batch in --journal: items that ended are not run again.")
    var resume = false

    @Flag(name: .customLong("retry-failed"), help: "Run again only the items of --journal's batch that failed (and those in doubt).")
    var retryFailed = false

    @Option(name: .customLong("in-doubt"), help: ArgumentHelp(
        "Items an earlier run started and never ended: retry (the default; jobs are meant to be idempotent), skip, or check (the script's verify(item, ctx) says whether it is done).",
        valueName: "policy"))
    var inDoubt = "retry"

    @Flag(help: "Resume even though the script or the input changed since the journal began.")
    var force = false

    @Flag(help: ArgumentHelp(ConnectionSecurity.insecureHelp))
    var insecure = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var tracing: TraceOptions

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard jobs >= 1, jobs <= 10_000 else { throw ValidationError("Invalid --jobs \(jobs): use 1 to 10000.") }
        guard retries >= 0, retries <= 100 else { throw ValidationError("Invalid --retries \(retries): use 0 to 100.") }
        for name in retryOn.split(separator: ",") where ErrorClass(rawValue: String(name)) == nil {
            throw ValidationError("Invalid --retry-on class '\(name)': use \(ErrorClass.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        _ = try backoffRange()
        for (flag, text) in [("--item-timeout", itemTimeout), ("--timeout", timeout), ("--grace", grace)] {
            if let text, DurationText.parse(text) == nil {
                throw ValidationError("Invalid \(flag) '\(text)': use a duration like 30s or 2m.")
            }
        }
        if let halt, halt.wholeMatch(of: /(soon|now),fail=[0-9]+(\.[0-9]+)?%?/) == nil {
            throw ValidationError("Invalid --halt '\(halt)': use soon,fail=N or now,fail=N, N a count or a percentage like 5%.")
        }
        if (resume || retryFailed) && journal == nil { throw ValidationError("--resume and --retry-failed need --journal DIR.") }
        if resume && retryFailed { throw ValidationError("Give --resume or --retry-failed, not both.") }
        guard ["retry", "skip", "check"].contains(inDoubt) else {
            throw ValidationError("Invalid --in-doubt '\(inDoubt)': use retry, skip or check.")
        }
        guard tolerate.wholeMatch(of: /[0-9]+(\.[0-9]+)?%?/) != nil else {
            throw ValidationError("Invalid --tolerate '\(tolerate)': use a count like 3 or a percentage like 5%.")
        }
    }

    private func backoffRange() throws -> (Double, Double) {
        let parts = backoff.components(separatedBy: "..")
        guard parts.count == 2, let low = DurationText.parse(parts[0]), let high = DurationText.parse(parts[1]), low <= high else {
            throw ValidationError("Invalid --backoff '\(backoff)': use MIN..MAX, like 100ms..5s.")
        }
        return (low.inSeconds, high.inSeconds)
    }

    func run() throws {
        logging.bootstrap()
        broker.resolve(logging)
        let format = logging.logFormat
        let (low, high) = try backoffRange()
        var options: [JSON.Member] = [
            .init("jobs", .int(Int64(jobs))), .init("retries", .int(Int64(retries))),
            .init("retry_on", .array(retryOn.split(separator: ",").map { .string(String($0)) })),
            .init("backoff", .array([.double(low), .double(high)])),
        ]
        if let key { options.append(.init("key", .string(key))) }
        if let itemTimeout, let duration = DurationText.parse(itemTimeout) { options.append(.init("item_timeout", .double(duration.inSeconds))) }
        if let timeout, let duration = DurationText.parse(timeout) { options.append(.init("timeout", .double(duration.inSeconds))) }
        if let grace = DurationText.parse(grace) { options.append(.init("grace", .double(grace.inSeconds))) }
        options.append(.init("tolerate", tolerate.hasSuffix("%") ? .string(tolerate) : .int(Int64(Double(tolerate) ?? 0))))
        if let halt { options.append(.init("halt", .string(halt))) }
        options.append(.init("in_doubt_policy", .string(inDoubt)))
        let mode = resume ? "resume" : retryFailed ? "retry-failed" : "new"
        let items: String
        do {
            items = try BatchInput.items(path: input)
        } catch {
            FailureReport.write(message: error.description, format: format)
            Baton.exitProcess(2)
        }
        let scriptSHA = Self.sha256(script), inputSHA = Self.sha256(input)
        let runID = UUID().uuidString.lowercased()
        let opened = journal.map { openJournal(folder: $0, mode: mode, options: options, scriptSHA: scriptSHA, inputSHA: inputSHA) }
        let context = JSON.object([
            .init("run_id", .string(runID)), .init("batch_id", .string(opened?.id ?? UUID().uuidString.lowercased())),
            .init("script", .string(script)), .init("input", .string(input)),
            .init("script_sha256", .string(scriptSHA)), .init("input_sha256", .string(inputSHA)),
            .init("report", .string(report ?? "")), .init("journal", .string(opened?.journal.path ?? "")),
            .init("skip", .array(opened?.skip.map { .string($0) } ?? [])),
            .init("in_doubt", .array(opened?.inDoubt.map { .string($0) } ?? [])),
            .init("command_line", .array(CommandLine.arguments.map { .string($0) })),
            .init("host", .string(ProcessInfo.processInfo.hostName)), .init("version", .string(Baton.configuration.version)),
            .init("progress", .string(progressStyle)),
        ])
        let traceContext = TraceOptions.context()
        let trace = tracing.open(runID: runID, context: traceContext, format: format)
        let runOptions = RuntimeOptions(
            maxMemory: RuntimeOptions.defaultScriptMemory, logger: Logger(label: "baton.batch"), reportFailure: { FailureReport.write($0, format: format) }, trace: trace?.0)
        var network = DeviceAccess.Options()
        network.discovery = discovery.directoryOptions
        network.traceparent = traceContext.traceparent
        network.security = { [insecure] in try ConnectionSecurity.forCommandLine(insecure: insecure) }
        CommandBroker.reaching(&network, insecure: insecure)
        // SIGINT and SIGTERM stop the batch gracefully: the driver writes the journal and report.
        Interruption.catchSignals()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let outcome = try LuaRuntime.run(
            .string(Self.driver, chunkName: "baton batch"),
            arguments: [JSON.object(options).serialized(), context.serialized(), items],
            options: runOptions, modules: BatonModules.standard(network: network), on: group.next()
        ).wait()
        switch outcome {
        case .invalidScript(let message):
            FailureReport.write(message: message, format: format)
        case .failed, .failedWith:
            // The script or the input did not load: a usage error, as for baton run.
            Baton.exitProcess(2)
        default:
            break
        }
        var exitCode = outcome.exitCode
        if let journal = opened?.journal {
            // A batch stopped before its first item still leaves a journal to resume.
            do {
                try journal.writeHeader()
            } catch {
                FailureReport.write(message: "\(error)", format: format)
                exitCode = BatchJournal.writeFailedExitCode
            }
        }
        if let (written, path) = trace, let problem = written.writeFailure {
            // Not the run's failure, but never silent: the trace lacks what it could not write.
            FailureReport.write(message: "cannot write the trace \(path) in full: \(problem)", format: format)
        }
        if let (_, path) = trace { tracing.settle(path: path, exitCode: exitCode) }
        CommandBroker.finish()
        Baton.exitProcess(exitCode)
    }

    /// The journal, locked, and what it says to skip and what is in doubt; or exits: 75 when
    /// another runner holds it (naming it), 2 when it cannot be used as it is, 74 when it
    /// cannot be read or written.
    private func openJournal(
        folder: String, mode: String, options: [JSON.Member], scriptSHA: String, inputSHA: String
    ) -> (journal: BatchJournal, id: String, skip: [String], inDoubt: [String]) {
        let format = logging.logFormat
        let command = CommandLine.arguments.joined(separator: " ")
        do {
            if mode == "new" {
                let id = UUID().uuidString.lowercased()
                let header = JSON.object([
                    .init("kind", .string("batch")), .init("id", .string(id)), .init("script", .string(script)),
                    .init("script_sha256", .string(scriptSHA)), .init("input", .string(input)), .init("input_sha256", .string(inputSHA)),
                    .init("policy", .object(options)),
                ])
                return (try BatchJournal.create(folder: folder, header: header, holder: command), id, [], [])
            }
            let (journal, contents) = try BatchJournal.resume(folder: folder, force: force, holder: command)
            let changed = contents.header["script_sha256"]?.stringValue != scriptSHA ? "script"
                : contents.header["input_sha256"]?.stringValue != inputSHA ? "input" : nil
            if let changed, !force {
                FailureReport.write(message: "the \(changed) changed since batch \(contents.id) began (give --force to resume anyway)", format: format)
                Baton.exitProcess(2)
            }
            if contents.cutBytes > 0 {
                Logger(label: "baton.batch").notice(
                    "cut the torn last line of \(journal.path) (\(contents.cutBytes) bytes, left by a runner that was killed) before appending")
            }
            var skip: [String] = [], ended: Set<String> = []
            for (key, status) in contents.ended where status != "cancelled" {
                // A cancelled item was stopped mid-way: in doubt, like one whose end was never written.
                ended.insert(key)
                if mode == "resume" || status != "failed" { skip.append(key) }
            }
            let inDoubt = contents.started.subtracting(ended).sorted()
            return (journal, contents.id, skip.sorted(), inDoubt)
        } catch let error as BatchJournal.JournalError {
            FailureReport.write(message: error.description, format: format)
            switch error {
            case .held: Baton.exitProcess(ErrorClass.lockHeld.exitCode)
            case .refused: Baton.exitProcess(ErrorClass.usage.exitCode)
            case .io: Baton.exitProcess(BatchJournal.writeFailedExitCode)
            }
        } catch {
            FailureReport.write(message: "\(error)", format: format)
            Baton.exitProcess(BatchJournal.writeFailedExitCode)
        }
    }

    /// How progress is shown: a bar redrawn on a terminal whose stderr carries no logs but
    /// ours, a plain line every few seconds elsewhere, a JSON line with JSON logs, none with -q.
    private var progressStyle: String {
        if logging.quiet { return "none" }
        if logging.logFormat == .json { return "json" }
        return isatty(2) != 0 ? (ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } == true ? "bar-plain" : "bar") : "lines"
    }

    /// The SHA-256 of a file's bytes, in hex; empty when it cannot be read.
    static func sha256(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// Loads the script, runs baton.batch on the items, writes the report and the summary:
    /// Lua/batch-driver.lua, embedded in the binary (`.embedInCode`).
    static let driver = String(decoding: PackageResources.batch_driver_lua, as: UTF8.self)
}
