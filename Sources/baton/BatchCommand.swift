import ArgumentParser
import BatonCore
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
            `key`, then `id`), else its position. `ctx` has `key`, `attempt`, `batch` (the \
            batch's id), `idempotency_key` (batch/key: what baton.handoff's key takes), `log` \
            and `ctx:changed()` (the item changed something, as against found it done).

            Items run --jobs at a time as tasks on one loop (not processes). An item that \
            raises an error of a class in --retry-on (default: unavailable and timeout; never \
            not_found, denied or a script error) is tried again, up to --retries more times, \
            after an exponential backoff with jitter (--backoff MIN..MAX). --item-timeout \
            cancels an item at its deadline (class timeout).

            The report (--report FILE, JSON) has the batch id, start, end, duration, status \
            (succeeded, succeeded_with_failures, failed), the exit code, the counts (total, \
            succeeded, changed, failed, retried), the failures by class, and every item: key, \
            status (ok, changed, failed), attempts, start, duration, error (class, message, \
            traceback, retryable). A summary goes to stderr.

            Not yet: the journal and --resume, --halt, progress, --trace (see issue 14).

            Examples:
              baton batch move.lua --input sessions.json --jobs 8 --retries 3 --report r.json
              baton batch launch.lua --input tvs.csv --key name --tolerate 5%

            Exit codes: 0 every item succeeded, or the failures are within --tolerate \
            (default 0); 4 more failed than that; 2 usage, or an input or script that does \
            not load.
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

    @Option(help: ArgumentHelp("Write the JSON report here.", valueName: "file"))
    var report: String?

    @Flag(help: ArgumentHelp(ConnectionSecurity.insecureHelp))
    var insecure = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard jobs >= 1, jobs <= 10_000 else { throw ValidationError("Invalid --jobs \(jobs): use 1 to 10000.") }
        guard retries >= 0, retries <= 100 else { throw ValidationError("Invalid --retries \(retries): use 0 to 100.") }
        for name in retryOn.split(separator: ",") where ErrorClass(rawValue: String(name)) == nil {
            throw ValidationError("Invalid --retry-on class '\(name)': use \(ErrorClass.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        _ = try backoffRange()
        if let itemTimeout, DurationText.parse(itemTimeout) == nil {
            throw ValidationError("Invalid --item-timeout '\(itemTimeout)': use a duration like 30s or 2m.")
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
        return (seconds(low), seconds(high))
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
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
        if let itemTimeout, let duration = DurationText.parse(itemTimeout) { options.append(.init("item_timeout", .double(seconds(duration)))) }
        options.append(.init("tolerate", tolerate.hasSuffix("%") ? .string(tolerate) : .int(Int64(Double(tolerate) ?? 0))))
        let runOptions = RuntimeOptions(logger: Logger(label: "baton.batch"), reportFailure: { FailureReport.write($0, format: format) })
        var network = DeviceAccess.Options()
        network.discovery = discovery.directoryOptions
        network.security = { [insecure] in try ConnectionSecurity.forCommandLine(insecure: insecure) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let outcome = try LuaRuntime.run(
            .string(Self.driver, chunkName: "baton batch"),
            arguments: [script, input, JSON.object(options).serialized(), report ?? ""],
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
        Baton.exitProcess(outcome.exitCode)
    }

    /// Loads the script and the items, runs baton.batch, writes the report and the summary.
    static let driver = #"""
local script, input, options, report_path = ...
local chunk, problem = loadfile(script)
if not chunk then error(problem, 0) end
chunk()
if type(job) ~= "function" then error(script .. " defines no function job(item, ctx)", 0) end

local file = io.open(input) or error("cannot read " .. input, 0)
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
  local header = rows[1] or error(input .. " has no header line", 0)
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
      if not ok then error(("%s:%d: not JSON: %s"):format(input, n, item), 0) end
      items[#items + 1] = item
    end
  end
end

local report = baton.batch(items, job, baton.json.decode(options))
report.script, report.input = script, input
if report_path ~= "" then
  local out = io.open(report_path, "w") or error("cannot write " .. report_path, 0)
  out:write(baton.json.encode(report, { pretty = true }), "\n")
  out:close()
end
local c = report.counts
io.stderr:write(("batch %s: %s, %d items: %d succeeded (%d changed), %d failed, %d retries, %.1f s\n"):format(
  report.id, report.status, c.total, c.succeeded, c.changed, c.failed, c.retried, report.duration))
for _, item in ipairs(report.items) do
  if item.status == "failed" then
    io.stderr:write(("  %s: %s: %s\n"):format(item.key, item.error.class, item.error.message))
  end
end
baton.exit(report.exit_code)
"""#
}
