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
            (succeeded, succeeded_with_failures, failed, halted, timed_out, cancelled), the \
            exit code, the policy, the counts (total, succeeded, changed, failed, skipped, \
            in_doubt, not_run, retried), the failures by class, every item (key, status, \
            attempts, start, duration, device, changed, error with class, message, traceback \
            and retryable), and with a journal the command that runs what is left. A summary \
            goes to stderr, and progress while it runs: a bar on a terminal (NO_COLOR \
            honoured), a line every 5 s elsewhere, none with -q.

            --journal DIR keeps DIR/journal.jsonl: a header (the batch id, the script's and \
            input's SHA-256, the policy), then for each item a start record, written and \
            fsynced before the item runs, and an end record. --resume continues that batch \
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
            143 SIGINT, SIGTERM; 2 usage, or an input or script that does not load.
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
        if let journal, mode == "new" {
            do {
                try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
            } catch {
                FailureReport.write(message: "cannot make the journal folder \(journal): \(error)", format: format)
                Baton.exitProcess(2)
            }
        }
        let runID = UUID().uuidString.lowercased()
        let context = JSON.object([
            .init("run_id", .string(runID)),
            .init("script", .string(script)), .init("input", .string(input)),
            .init("script_sha256", .string(Self.sha256(script))), .init("input_sha256", .string(Self.sha256(input))),
            .init("report", .string(report ?? "")), .init("journal", .string(journal.map { $0 + "/journal.jsonl" } ?? "")),
            .init("journal_dir", .string(journal ?? "")), .init("mode", .string(mode)), .init("force", .bool(force)),
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
        // SIGINT and SIGTERM stop the batch gracefully: the driver writes the journal and report.
        Interruption.catchSignals()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let outcome = try LuaRuntime.run(
            .string(Self.driver, chunkName: "baton batch"),
            arguments: [JSON.object(options).serialized(), context.serialized()],
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
        if let (_, path) = trace { tracing.settle(path: path, exitCode: outcome.exitCode) }
        Baton.exitProcess(outcome.exitCode)
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

    /// Loads the script and the items, reads and writes the journal, runs baton.batch, writes
    /// the report and the summary.
    static let driver = #"""
local options, context = ...
options = baton.json.decode(options)
context = baton.json.decode(context)
local script, input, journal, mode, report_path = context.script, context.input, context.journal, context.mode, context.report
-- The policy as given, for the report, before the driver adds what only it needs.
local policy = baton.json.decode(baton.json.encode(options))
-- What keeps the batch from starting is a usage error: said in one line, exit 2.
local function refuse(message) io.stderr:write(message, "\n") baton.exit(2) end
local chunk, problem = loadfile(script)
if not chunk then refuse(problem) end
chunk()
if type(job) ~= "function" then refuse(script .. " defines no function job(item, ctx)") end
if options.in_doubt_policy == "check" then
  if type(verify) ~= "function" then refuse("--in-doubt check needs " .. script .. " to define verify(item, ctx)") end
  options.verify = verify
end

local file = io.open(input) or refuse("cannot read " .. input)
local text = file:read("a")
file:close()
local items = {}
if input:lower():match("%.csv$") then
  -- RFC 4180: fields separated by commas, quoted with "", "" inside quotes for a quote.
  local rows, row, field, i, quoted = {}, {}, {}, 1, false
  local function finish_field() row[#row + 1] = table.concat(field) field = {} end
  while i <= #text do
    local c = text:sub(i, i)
    if quoted then
      if c == '"' and text:sub(i + 1, i + 1) == '"' then field[#field + 1] = '"' i = i + 1
      elseif c == '"' then quoted = false
      else field[#field + 1] = c end
    elseif c == '"' then quoted = true
    elseif c == "," then finish_field()
    elseif c == "\n" or c == "\r" then
      if c == "\r" and text:sub(i + 1, i + 1) == "\n" then i = i + 1 end
      finish_field()
      if #row > 1 or row[1] ~= "" then rows[#rows + 1] = row end
      row = {}
    else field[#field + 1] = c end
    i = i + 1
  end
  if #field > 0 or #row > 0 then finish_field() rows[#rows + 1] = row end
  local header = rows[1] or refuse(input .. " has no header line")
  for r = 2, #rows do
    local item = {}
    for c, name in ipairs(header) do item[name] = rows[r][c] or "" end
    items[#items + 1] = item
  end
elseif text:match("^%s*%[") then
  items = baton.json.decode(text)
else
  local n = 0
  for line in text:gmatch("[^\n]+") do
    n = n + 1
    if line:match("%S") then
      local ok, item = pcall(baton.json.decode, line)
      if not ok then refuse(("%s:%d: not JSON: %s"):format(input, n, item)) end
      items[#items + 1] = item
    end
  end
end

local script_sha, input_sha = context.script_sha256, context.input_sha256
if journal ~= "" then
  local existing = io.open(journal)
  if mode == "new" then
    if existing then existing:close() refuse(journal .. " already holds a batch: --resume it, or give another --journal") end
    options.id = tostring(baton.uuid())
    local header = io.open(journal, "w") or refuse("cannot write " .. journal)
    header:write(baton.json.encode({ kind = "batch", id = options.id, script = script, script_sha256 = script_sha,
                                     input = input, input_sha256 = input_sha, policy = policy }), "\n")
    header:close()
  else
    if not existing then refuse("no journal at " .. journal .. " to resume") end
    local started, ended = {}, {}
    for line in existing:lines() do
      local ok, r = pcall(baton.json.decode, line)
      if ok and r.kind == "batch" then
        if not context.force and (r.script_sha256 ~= script_sha or r.input_sha256 ~= input_sha) then
          existing:close()
          refuse(("the %s changed since batch %s began (give --force to resume anyway)"):format(
            r.script_sha256 ~= script_sha and "script" or "input", r.id))
        end
        options.id = r.id
      elseif ok and r.kind == "start" then started[r.key] = true
      elseif ok and r.kind == "end" then ended[r.key] = r.status end
    end
    existing:close()
    options.skip, options.in_doubt = {}, {}
    for key, status in pairs(ended) do
      -- A cancelled item was stopped mid-way: in doubt, like one whose end was never written.
      if status == "cancelled" then ended[key] = nil
      elseif mode == "resume" or status ~= "failed" then options.skip[key] = true end
    end
    for key in pairs(started) do
      if ended[key] == nil then options.in_doubt[key] = true end
    end
  end
  options.journal = journal
end

-- Progress on stderr: a bar redrawn in place on a terminal, else a line every few seconds.
local style = context.progress
-- A bar shows at once; a plain line first after its interval.
local last_shown = (style == "lines" or style == "json") and 0 or nil
local function eta_text(seconds)
  if not seconds then return "?" end
  if seconds >= 3600 then return ("%dh%02dm"):format(seconds // 3600, seconds % 3600 // 60) end
  if seconds >= 60 then return ("%dm%02ds"):format(seconds // 60, seconds % 60) end
  return ("%ds"):format(math.ceil(seconds))
end
if style ~= "none" then
  options.progress = function(c, elapsed)
    local bar = style == "bar" or style == "bar-plain"
    if last_shown and elapsed - last_shown < (bar and 0.2 or 5) then return end
    last_shown = elapsed
    local done = c.succeeded + c.failed + c.skipped + c.in_doubt
    local eta = done > c.skipped and elapsed / (done - c.skipped) * (c.total - done) or nil
    if bar then
      local width = 30
      local filled = c.total > 0 and width * done // c.total or width
      local failed = ("%d failed"):format(c.failed)
      if style == "bar" and c.failed > 0 then failed = "\27[31m" .. failed .. "\27[0m" end
      io.stderr:write(("\r[%s%s] %d/%d  %s  ETA %s\27[K"):format(string.rep("#", filled), string.rep("-", width - filled),
        done, c.total, failed, eta_text(eta)))
    elseif style == "json" then
      io.stderr:write(baton.json.encode({ kind = "progress", batch = options.id, done = done, total = c.total,
        failed = c.failed, elapsed = elapsed, eta = eta }), "\n")
    else
      io.stderr:write(("batch: %d/%d done, %d failed, %.0f s, ETA %s\n"):format(done, c.total, c.failed, elapsed, eta_text(eta)))
    end
  end
end
options.signals = true

local report = baton.batch(items, job, options)
if last_shown and (style == "bar" or style == "bar-plain") then io.stderr:write("\r\27[K") end

-- The command that runs what is left: the failures, and what never ran or was left in doubt.
local function quote(word)
  if word:match("^[%w@%%+=:,./_-]+$") then return word end
  return "'" .. word:gsub("'", "'\\''") .. "'"
end
local c = report.counts
if c.failed + c.in_doubt + c.not_run > 0 and journal ~= "" then
  local words = {}
  for _, word in ipairs(context.command_line) do
    if word ~= "--resume" and word ~= "--retry-failed" then words[#words + 1] = quote(word) end
  end
  words[#words + 1] = "--retry-failed"
  report.retry_command = table.concat(words, " ")
end
report.script, report.input = script, input
report.script_sha256, report.input_sha256 = script_sha, input_sha
report.command_line, report.host, report.version = context.command_line, context.host, context.version
report.policy = policy
report.run_id = context.run_id
if report_path ~= "" then
  local out = io.open(report_path, "w") or refuse("cannot write " .. report_path)
  out:write(baton.json.encode(report, { pretty = true }), "\n")
  out:close()
end
io.stderr:write(("batch %s: %s, %d items: %d succeeded (%d changed), %d failed, %d retries, %d skipped, %d in doubt, %d not run, %.1f s\n"):format(
  report.id, report.status, c.total, c.succeeded, c.changed, c.failed, c.retried, c.skipped, c.in_doubt, c.not_run, report.duration))
for _, item in ipairs(report.items) do
  if item.status == "failed" then
    io.stderr:write(("  %s: %s: %s\n"):format(item.key, item.error.class, item.error.message))
  end
end
if report.retry_command then
  io.stderr:write("to run what is left: ", report.retry_command, "\n")
elseif c.failed + c.in_doubt + c.not_run > 0 then
  io.stderr:write("(with --journal DIR, --retry-failed would run what is left)\n")
end
baton.exit(report.exit_code)
"""#
}
