import ArgumentParser
import BatonCore
import BatonLua
import BatonNet
import Foundation
import Logging
import NIOPosix

/// `baton run`: runs a Lua script with the `baton` module.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a Lua 5.4 script with the baton module.",
        discussion: """
            The script gets Lua's standard libraries and `baton` (a global, and \
            `require "baton"`). Its arguments are `...` and `arg[1]`, `arg[2]`, ...; \
            `arg[0]` is the script's name and `arg[-1]`, `arg[-2]`, ... the words before \
            it. Anything after the script goes to the script, flags included. With -e, \
            flags right after the chunk are baton's: put -- before the chunk's arguments.

            The run ends when the main chunk has returned and nothing is left that can \
            fire (no task, timer or wait pending), at `baton.exit(code)`, or at --timeout.

            --timeout stops Lua code anywhere, pcall and pattern matching included; a script \
            stuck in a C function that never returns (a blocking os.execute or read) is \
            ended by a watchdog 2s after the timeout, with exit 3 and its \
            trace finished. The script's memory is capped at 1G unless --max-memory says \
            otherwise.

            --lock NAME runs the script only if no other run holds that lock (see baton \
            lock): one run of a job at a time, from cron or by hand.

            --trace FILE writes what the run saw and did as JSON lines (calls with their \
            device, status and duration, tasks, events, logs, errors with tracebacks); \
            `baton trace show FILE` prints it as a tree. Lines reach the file at least every \
            200 ms, so a run killed with -9 loses at most its last 200 ms. A traced run \
            ended by SIGINT or SIGTERM finishes its trace (run.end, outcome interrupted, exit \
            130 or 143; --trace-dir names it -failed) and then dies by that signal; a second \
            signal, or a run whose Lua does not yield within 2 s, finishes it at once. --trace-dir DIR keeps the last runs' \
            traces and, apart from them, the last failed ones. A TRACEPARENT in the \
            environment (W3C trace context) makes the run part of that trace.

            Examples:
              baton run examples/hello.lua world
              baton run --lock nightly --on-conflict skip --jitter 30s job.lua
              baton run --trace-dir ~/.local/state/baton/traces nightly.lua
              baton run --timeout 30s --max-memory 64M job.lua jobs.json
              baton run -e 'baton.log.info("hi", baton.date())'
              echo 'print(1 + 1)' | baton run -

            Exit codes: 0 success; 1 an uncaught error in the main chunk, a task, a timer \
            or a handler; 2 usage, or a script that does not load (shown as \
            file:line: message); 3 timeout; n for baton.exit(n). An uncaught error of a \
            class (err.class in Lua) exits with its class's code: 68 not_found \
            (baton.find(name, {required = true})), 69 unavailable, 75 lock_held, 77 denied, \
            3 timeout (baton.check(status) raises a status's class; baton.error(class, \
            message) raises one).
            """
    )

    @Option(name: .customShort("e"), help: ArgumentHelp("Run CHUNK instead of a script file.", valueName: "chunk"))
    var execute: String?

    @Option(help: ArgumentHelp("Stop the whole run after this long, even a busy loop: 500ms, 30s, 2m.", valueName: "duration"))
    var timeout: String?

    @Option(name: .customLong("max-memory"), help: ArgumentHelp("Cap the script's memory: 64M, 512K, 4G (default 1G; 0 for no cap). Allocations past it fail with \"not enough memory\".", valueName: "size"))
    var maxMemory: String?

    @OptionGroup var discovery: DiscoveryOptions

    @Option(name: .customLong("connect-timeout"), help: ArgumentHelp("How long reaching a device may take before it counts as unavailable.", valueName: "duration"))
    var connectTimeout: String = "3s"

    @Flag(help: ArgumentHelp(ConnectionSecurity.insecureHelp))
    var insecure = false

    @Option(help: ArgumentHelp(
        "Hold the lock NAME for the whole run: one run of a job at a time, across processes (a kernel lock: a run killed with -9 leaves nothing stale).",
        valueName: "name"))
    var lock: String?

    @Option(name: .customLong("on-conflict"), help: ArgumentHelp(
        "When another run holds --lock: fail (the default: exit 75), skip (exit 0, saying so, running nothing) or wait (up to --lock-wait).",
        valueName: "policy"))
    var onConflict: String?

    @Option(name: .customLong("lock-wait"), help: ArgumentHelp("How long --on-conflict wait waits for the lock (default 1m); given alone, it means wait.", valueName: "duration"))
    var lockWait: String?

    @Option(help: ArgumentHelp("Sleep a random time up to this first, so that a fleet of cron lines does not start at one instant: 30s, 5m.", valueName: "duration"))
    var jitter: String?

    @OptionGroup var tracing: TraceOptions

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    @Argument(help: ArgumentHelp("The script to run, or - for standard input.", valueName: "script"))
    var script: String?

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("Arguments for the script.", valueName: "args"))
    var arguments: [String] = []

    /// How long after --timeout the watchdog ends a run whose thread is stuck.
    static let watchdogGrace: Duration = .seconds(2)

    /// --max-memory as bytes: the default cap when not given, none for 0.
    static func memoryCap(_ text: String?) -> Int? {
        guard let text else { return RuntimeOptions.defaultScriptMemory }
        let bytes = ByteSizeText.parse(text)
        return bytes == 0 ? nil : bytes
    }

    func validate() throws {
        if execute == nil && script == nil {
            throw ValidationError("Missing a script: give a file, - for standard input, or -e 'CHUNK'.")
        }
        if let timeout, DurationText.parse(timeout) == nil {
            throw ValidationError("Invalid --timeout '\(timeout)': use a duration like 500ms, 30s or 2m.")
        }
        if let maxMemory, ByteSizeText.parse(maxMemory) == nil {
            throw ValidationError("Invalid --max-memory '\(maxMemory)': use a size like 512K, 64M or 1G.")
        }
        if DurationText.parse(connectTimeout) == nil {
            throw ValidationError("Invalid --connect-timeout '\(connectTimeout)': use a duration like 500ms or 3s.")
        }
        if let lock, let problem = NamedLock.problem(with: lock) { throw ValidationError("Invalid --lock: \(problem).") }
        if let onConflict, !["fail", "skip", "wait"].contains(onConflict) {
            throw ValidationError("Invalid --on-conflict '\(onConflict)': use fail, skip or wait.")
        }
        if lock == nil, onConflict != nil || lockWait != nil {
            throw ValidationError("--on-conflict and --lock-wait go with --lock NAME.")
        }
        for (flag, text) in [("--lock-wait", lockWait), ("--jitter", jitter)] {
            if let text, DurationText.parse(text) == nil {
                throw ValidationError("Invalid \(flag) '\(text)': use a duration like 500ms, 30s or 2m.")
            }
        }
    }

    /// Sleeps the jitter, then takes --lock as --on-conflict says; exits 75 (held), or 0 for
    /// skip, when the run is not to go on. The lock is held until the process ends.
    private func takeLock(runID: String, format: LogFormat) -> NamedLock? {
        if let jitter, let span = DurationText.parse(jitter), span > .zero {
            usleep(UInt32(clamping: Int64(Double.random(in: 0...span.inSeconds) * 1e6)))
        }
        guard let name = lock else { return nil }
        let policy = onConflict ?? (lockWait != nil ? "wait" : "fail")
        let wait = policy == "wait" ? DurationText.parse(lockWait ?? "1m") ?? .seconds(60) : .zero
        let holder = NamedLock.Holder(runID: runID, command: CommandLine.arguments.joined(separator: " "))
        let deadline = ContinuousClock.now + wait
        while true {
            do {
                if let taken = try NamedLock.tryAcquire(name, holder: holder) { return taken }
            } catch {
                FailureReport.write(message: "cannot use lock \(name): \(error)", format: format, errorClass: .usage)
                Baton.exitProcess(ErrorClass.usage.exitCode)
            }
            if ContinuousClock.now >= deadline { break }
            usleep(25_000)
        }
        let held = NamedLock.status(of: name).holder.map { " by \($0.description)" } ?? ""
        if policy == "skip" {
            Logger(label: "baton.run").notice("skipped: lock \(name) is held\(held)")
            Baton.exitProcess(0)
        }
        FailureReport.write(message: "lock \(name) is held\(held)", format: format, errorClass: .lockHeld)
        Baton.exitProcess(ErrorClass.lockHeld.exitCode)
    }

    func run() throws {
        logging.bootstrap()
        broker.resolve(logging)
        let format = logging.logFormat
        let runID = UUID().uuidString.lowercased()
        let held = takeLock(runID: runID, format: format)
        defer { held?.release() }

        let source: ScriptSource
        var args = arguments
        var commandLine: [String] = []
        if let execute {
            source = .string(execute, chunkName: "(command line)")
            if let script { args.insert(script, at: 0) }
        } else {
            source = script == "-" ? .standardInput : .file(script!)
            // The words before the script, for arg[-n...-1]: the script and its arguments end
            // the command line.
            commandLine = Array(CommandLine.arguments.dropLast(args.count + 1))
        }
        let traceContext = TraceOptions.context()
        let trace = tracing.open(runID: runID, context: traceContext, format: format)
        let options = RuntimeOptions(
            timeout: timeout.flatMap(DurationText.parse),
            maxMemory: Self.memoryCap(maxMemory),
            logger: Logger(label: "baton.script"),
            reportFailure: { FailureReport.write($0, format: format) },
            trace: trace?.0
        )
        var network = DeviceAccess.Options()
        network.discovery = discovery.directoryOptions
        network.connectTimeout = DurationText.parse(connectTimeout)!
        network.traceparent = traceContext.traceparent
        // Loaded on the script's first network call: scripts that never connect start faster.
        network.security = { [insecure] in try ConnectionSecurity.forCommandLine(insecure: insecure) }
        CommandBroker.reaching(&network, insecure: insecure)
        let stopper = trace.map { trace in SignalStop(settle: { tracing.settle(path: trace.1, exitCode: $0) }) }
        stopper?.catchSignals()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let outcome = try LuaRuntime.run(
            source, arguments: args, commandLine: commandLine, options: options,
            modules: BatonModules.standard(network: network, runID: runID), on: group.next()
        ) { runtime in
            stopper?.runtime.withLock { $0 = runtime }
            // The loop's thread may be stuck in a C function no deadline reaches: end the
            // process from another thread, the trace finished first.
            runtime.startWatchdog(grace: Self.watchdogGrace) { outcome in
                if case .timedOut(let duration) = outcome {
                    FailureReport.write(
                        message: "timeout after \(DurationText.format(duration)) (stuck in a C function: ended \(DurationText.format(Self.watchdogGrace)) later)",
                        format: format, errorClass: .timeout)
                }
                if let (_, path) = trace { tracing.settle(path: path, exitCode: outcome.exitCode) }
                Baton.exitProcess(outcome.exitCode)
            }
        }.wait()
        switch outcome {
        case .invalidScript(let message):
            FailureReport.write(message: message, format: format, errorClass: .usage)
        case .timedOut(let duration):
            FailureReport.write(message: "timeout after \(DurationText.format(duration))", format: format, errorClass: .timeout)
        case .completed, .failed, .failedWith, .exited, .interrupted:
            break
        }
        if let (written, path) = trace, let problem = written.writeFailure {
            // Not the run's failure, but never silent: the trace lacks what it could not write.
            FailureReport.write(message: "cannot write the trace \(path) in full: \(problem)", format: format)
        }
        if let (_, path) = trace { tracing.settle(path: path, exitCode: outcome.exitCode) }
        CommandBroker.finish()
        if case .interrupted(let signal) = outcome { Interruption.die(by: signal) }
        Baton.exitProcess(outcome.exitCode)
    }
}
