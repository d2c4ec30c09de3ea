import ArgumentParser
import BatonClient
import BatonCore
import NIOCore

/// `baton handoff`: moves what one device plays to another.
struct HandoffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "handoff",
        abstract: "Move what one device plays to another, and prove the other plays it.",
        discussion: """
            Make-before-break: reads what FROM plays (its player app's baton.playback state), \
            starts TO at the position FROM will have reached, muted, and waits until TO's \
            player proves it plays (the file loaded, the position advancing at real speed); \
            corrective seeks (up to 3) while TO is more than 5 ms from FROM (a player that \
            ignored the start offset, or started late); then, in one instant, unmutes TO and pauses FROM (--source). If TO fails \
            at any point, FROM keeps playing as it was and TO is stopped. A paused FROM gives a \
            paused TO at the same position. The queue and its entry go along. FROM and TO \
            must be two devices: a device handed to itself is a usage error (exit 2), and \
            nothing is touched.

            A TO that plays something already is silenced by a handoff only when asked \
            (--busy): by default it is replaced when FROM plays (the music follows you) and \
            refused (target_busy, nothing touched) when FROM is paused. --busy replace \
            replaces it always; --busy refuse refuses always.

            The positions and the error are measurements: each player's position is read \
            several times and lined up at the player's own steps (mpv's moves in 50-100 ms \
            steps), after every corrective seek.

            Prints how it went: the status, the positions at the switch, the position error \
            (TO minus FROM at one instant while both played, after the last seek, ms), the overlap (both audible, ms; negative is a gap), the \
            latency and each phase's time. With --json, one object: {"status":…, \
            "position_at_source":…, "position_at_target":…, "position_error_ms":…, \
            "overlap_ms":…, "latency_ms":…, "phases":{…}, …}.

            Statuses: success, nothing_playing (FROM plays nothing), source_unavailable, \
            target_unavailable (unreachable, or no player app), media_unavailable (TO cannot \
            open what FROM plays; FROM untouched), target_failed (TO loaded it but did not play \
            as asked), source_stop_failed (TO plays, FROM did not pause: both play), \
            target_busy (TO plays and --busy refused it), same_device, timeout, cancelled. A handoff with --key that took effect within the last 10 minutes is not \
            done again: its report is printed, marked repeated.

            Examples:
              baton handoff Phone "Living Room TV"
              baton handoff 127.0.0.1:47301 127.0.0.1:47302 --source stop --volume copy --json
              baton handoff Phone Speaker --key "evening-$(date +%F)"

            Exit codes follow why it failed (the report's cause and class), as for every \
            command: 0 success; 1 nothing_playing, media_unavailable (a file TO cannot \
            open, as for launch), target_failed, source_stop_failed, cancelled, a player \
            that failed; 2 usage (same_device: a device handed to itself); 3 timeout; 68 no \
            such device (by name or id); 69 source_unavailable, target_unavailable \
            (unreachable, no player app), target_busy (it plays, and --busy refuses it); 77 a \
            device of another account or revoked. With --json, one object, failures \
            included, with cause, class and exit_code.
            """
    )

    @Argument(help: ArgumentHelp("The device that plays now: name, id or host:port.", valueName: "from"))
    var from: String

    @Argument(help: ArgumentHelp("The device to play on: name, id or host:port.", valueName: "to"))
    var to: String

    @Option(help: ArgumentHelp("The player app on both devices; by default, each device's first app that answers baton.playback.", valueName: "id"))
    var app: String?

    @Option(help: ArgumentHelp("What becomes of FROM once TO plays: pause (the default), stop or keep.", valueName: "policy"))
    var source = "pause"

    @Option(help: ArgumentHelp("keep (the default): TO keeps its own volume; copy: TO takes FROM's.", valueName: "policy"))
    var volume = "keep"

    @Option(help: ArgumentHelp(
        "A TO that plays already: replace it, or refuse (target_busy). By default: refused when FROM is paused, replaced when FROM plays.",
        valueName: "policy"))
    var busy: String?

    @Option(help: ArgumentHelp("The whole handoff's deadline: 5s, 30s. Every phase gets what is left of it.", valueName: "duration"))
    var timeout = "15s"

    @Option(help: ArgumentHelp("Do it once: a handoff with this key that took effect within 10 minutes is not done again.", valueName: "key"))
    var key: String?

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    @OptionGroup var discovery: DiscoveryOptions

    @OptionGroup var client: ClientOptions

    @OptionGroup var broker: BrokerOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        _ = try DeviceArgument.parse(from)
        _ = try DeviceArgument.parse(to)
        _ = try options()
    }

    func options() throws -> HandoffOptions {
        var options = HandoffOptions()
        options.app = app
        guard let source = HandoffOptions.SourcePolicy(rawValue: source) else {
            throw ValidationError("Invalid --source '\(source)': use pause, stop or keep.")
        }
        guard let volume = HandoffOptions.VolumePolicy(rawValue: volume) else {
            throw ValidationError("Invalid --volume '\(volume)': use keep or copy.")
        }
        guard let duration = DurationText.parse(timeout), duration > .zero, duration <= .seconds(3600) else {
            throw ValidationError("Invalid --timeout '\(timeout)': use a duration above zero and up to 1h, like 5s or 30s.")
        }
        if let key, key.isEmpty { throw ValidationError("Invalid --key: it must not be empty.") }
        if let busy {
            guard let policy = HandoffOptions.BusyPolicy(rawValue: busy) else {
                throw ValidationError("Invalid --busy '\(busy)': use replace or refuse.")
            }
            options.busy = policy
        }
        options.source = source
        options.volume = volume
        options.timeout = duration
        options.key = key
        return options
    }

    func run() throws {
        let options = try options()
        logging.bootstrap()
        broker.resolve(logging)
        let baton = client.makeClient(logging)
        let output = FailureOutput(json: json, logging: logging)
        let resolve = { (text: String) in
            try output.catching(client: baton) {
                try DeviceArgument.resolve(text, client: baton, discovery: discovery, authorization: client.authorizationKind, timeout: client.timeout)
            }
        }
        let (source, target) = (try resolve(from), try resolve(to))
        // One device twice (same_device, exit 2) is refused by the handoff itself, before
        // anything is asked of either.
        let promise = baton.eventLoop.makePromise(of: HandoffReport.self)
        promise.completeWithTask { await baton.handoff(from: source, to: target, options: options) }
        let report = try promise.futureResult.wait()
        baton.finish()
        let cause = report.failureCause
        if json {
            var message = report.message
            message["exit_code"] = .int(Int64(ExitCodes.code(cause)))
            do {
                Swift.print(try MessageText.json(message, path: "report"))
            } catch {
                // Only NaN or an infinity in a figure can get here: the object without them.
                Swift.print(JSON.object(CommandFailure.members(status: report.status.rawValue, cause: cause, detail: report.detail)).serialized())
            }
        } else {
            Self.show(report, to: to)
        }
        if let cause, json || logging.logFormat == .json {
            output.log(CommandFailure(status: report.status.rawValue, cause: cause, detail: report.detail))
        }
        Baton.exitProcess(ExitCodes.code(cause))
    }

    /// The report for people: a line saying what happened (the status on stderr when it is not
    /// success), then the figures.
    static func show(_ report: HandoffReport, to: String) {
        if report.status == .success {
            Swift.print("success: \(to) plays \(report.uri ?? "it")\(report.paused ? " (paused)" : "") from \(seconds(report.positionAtTarget))"
                + (report.repeated ? " (repeated: done already under this key)" : ""))
        } else {
            StandardError.write("\(report.status.rawValue): \(report.detail)\n")
        }
        var figures: [String] = []
        if let position = report.positionAtSource { figures.append("at source \(seconds(position))") }
        if let position = report.positionAtTarget { figures.append("at target \(seconds(position))") }
        if let error = report.positionErrorMs { figures.append("error \(milliseconds(error))") }
        if let overlap = report.overlapMs { figures.append(overlap >= 0 ? "overlap \(milliseconds(overlap))" : "gap \(milliseconds(-overlap))") }
        figures.append("latency \(milliseconds(report.latencyMs))")
        if report.corrected { figures.append(report.seeks == 1 ? "corrected by a seek" : "corrected by \(report.seeks) seeks") }
        if report.rolledBack { figures.append("rolled back") }
        Swift.print("  " + figures.joined(separator: ", "))
        Swift.print("  phases: " + report.phases.map { "\($0.name) \(milliseconds($0.ms))" }.joined(separator: ", "))
    }

    private static func seconds(_ value: Double?) -> String {
        value.map { String(format: "%.3f s", $0) } ?? "?"
    }

    private static func milliseconds(_ value: Double) -> String {
        String(format: "%.1f ms", value)
    }
}
