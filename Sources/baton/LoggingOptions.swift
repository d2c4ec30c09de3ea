import ArgumentParser
import Logging

/// The logging flags every long-running command shares.
struct LoggingOptions: ParsableArguments {
    @Option(name: .customLong("log-format"), help: "How logs and errors are written to stderr: text, or json (one object a line).")
    var logFormat: LogFormat = .text

    @Flag(name: .shortAndLong, help: "Log errors only.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Log debug messages too.")
    var verbose = false

    func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet and --verbose cannot be used together.") }
    }

    /// Sends every logger to stderr in the chosen format and level.
    func bootstrap() {
        let level: Logger.Level = quiet ? .error : (verbose ? .debug : .info)
        let format = logFormat
        LoggingSystem.bootstrap { _ in StderrLogHandler(format: format, logLevel: level) }
    }
}
