import BatonClient
import BatonCore

/// A command's failure: its status (the Rome status, or `not_found`, `bad_request`, ...),
/// why typed and why in words. Its cause alone decides the class and the exit code
/// (``FailureCause/errorClass``), whichever command met it.
struct CommandFailure: Error {
    /// What the command prints first: `remote_system_unavailable`, `not_found`, ...
    var status: String
    var cause: FailureCause
    /// For people.
    var detail: String
    /// The command's own fields for its JSON object (`device`, `uri`, `reply`, ...).
    var fields: [JSON.Member] = []

    var exitCode: Int32 { cause.exitCode }

    /// `status: detail`, or the status alone.
    var text: String { detail.isEmpty ? status : "\(status): \(detail)" }

    /// The one JSON object a command with `--json` prints for it:
    /// `{"status", "cause", "class", "exit_code", "detail", ...fields}`.
    var json: JSON {
        .object(Self.members(status: status, cause: cause, detail: detail) + fields)
    }

    /// The members every command's JSON object carries: status, then, when it failed, cause,
    /// class and exit code, then detail.
    static func members(status: String, cause: FailureCause?, detail: String) -> [JSON.Member] {
        var members = [JSON.Member("status", .string(status))]
        if let cause {
            members.append(JSON.Member("cause", .string(cause.rawValue)))
            members.append(JSON.Member("class", .string(cause.errorClass.rawValue)))
        }
        members.append(JSON.Member("exit_code", .int(Int64(cause?.exitCode ?? 0))))
        members.append(JSON.Member("detail", .string(detail)))
        return members
    }
}

/// Where a command's failure goes: with `--json`, one JSON object on stdout (and nothing
/// else there); its line on stderr, a JSON log line with `class` under `--log-format json`.
struct FailureOutput {
    /// Whether the command prints one JSON object on stdout.
    var json: Bool
    var logFormat: LogFormat
    /// Whether the text form goes to stdout (launch prints its status there), not stderr.
    var textOnStdout = false

    init(json: Bool, logging: LoggingOptions, textOnStdout: Bool = false) {
        self.json = json
        self.logFormat = logging.logFormat
        self.textOnStdout = textOnStdout
    }

    /// Prints `failure` and ends the process with its exit code, after `client` said goodbye.
    func exit(_ failure: CommandFailure, client: BatonClient? = nil) -> Never {
        client?.finish()
        if json {
            print(failure.json.serialized())
        } else if textOnStdout {
            print(failure.text)
        }
        // Its line on stderr, unless the same text went to stdout already.
        if json || !textOnStdout || logFormat == .json { log(failure) }
        Baton.exitProcess(failure.exitCode)
    }

    /// `body`'s value; a ``CommandFailure`` it throws is printed and ends the process.
    func catching<T>(client: BatonClient? = nil, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as CommandFailure {
            exit(failure, client: client)
        }
    }

    /// The failure's line on stderr: `status: detail`, or a JSON log line (level error)
    /// carrying `status`, `cause`, `class` and `exit_code`.
    func log(_ failure: CommandFailure) {
        switch logFormat {
        case .text:
            StandardError.write(failure.text + "\n")
        case .json:
            StandardError.write(StderrLogHandler.line(
                format: .json, level: "error", message: failure.text, source: "baton",
                fields: [("status", failure.status), ("cause", failure.cause.rawValue),
                         ("class", failure.cause.errorClass.rawValue), ("exit_code", "\(failure.exitCode)")]))
        }
    }
}
