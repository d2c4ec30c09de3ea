import ArgumentParser

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct Baton: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "Find your devices, launch things on them, and script it all in Lua.",
        discussion: """
            Every device runs `baton agent`; from any of them, `baton` finds the others, \
            launches URIs on them and keeps message channels open to their services. \
            `baton run` runs Lua scripts that orchestrate all of it.

            Exit codes, by class: 0 success; 1 an error in a script, or a service that \
            failed; 2 usage, or a script that does not load; 3 timeout; 4 a batch past what it \
            tolerates; 68 no such device; 69 a device, app or service unavailable; 75 a lock \
            another run holds; 77 denied.
            """,
        version: "0.1.0",
        subcommands: [Run.self, AgentCommand.self, DevicesCommand.self, LaunchCommand.self, SendCommand.self, HandoffCommand.self, PlayersCommand.self, BatchCommand.self, DescribeCommand.self, LockCommand.self, TraceCommand.self, AccountCommand.self, BrokerCommand.self]
    )

    /// Parses and runs, mapping argument errors to exit code 2 (the usage code Baton promises)
    /// rather than the parser's 64.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
            exitProcess(0)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
                exitProcess(0)
            }
            if !message.isEmpty {
                // Scripts that parse JSON logs get a JSON line even for a usage error.
                let args = CommandLine.arguments
                let json = args.contains("--log-format=json")
                    || zip(args, args.dropFirst()).contains { $0 == "--log-format" && $1 == "json" }
                if json {
                    FailureReport.write(message: message, format: .json, errorClass: code == .validationFailure ? .usage : .script)
                } else {
                    StandardError.write(message + "\n")
                }
            }
            exitProcess(code == .validationFailure ? 2 : code.rawValue)
        }
    }

    /// Flushes C's standard output (where Lua's print writes) and ends the process.
    static func exitProcess(_ code: Int32) -> Never {
        fflush(nil)
        Glibc.exit(code)
    }
}
