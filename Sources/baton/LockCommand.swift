import ArgumentParser
import BatonCore
import BatonLua

/// `baton lock`: the locks runs share (`baton run --lock`, `baton.lock`).
struct LockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract: "Show the locks runs share.",
        discussion: """
            Runs share locks by name: `baton run --lock NAME` holds one for the whole run, and \
            `baton.lock(NAME)` in a script for as long as its lease lives. They are kernel \
            locks on files in $BATON_LOCK_DIR (else $XDG_RUNTIME_DIR/baton/locks, else \
            ~/.local/state/baton/locks): a run killed with -9 holds nothing. Each file says \
            who took it last, for people; whether it is held is the kernel's answer.
            """,
        subcommands: [Status.self]
    )

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Say which locks are held, and by whom.",
            discussion: """
                Prints NAME, held or free, and the holder (pid, run id, since, command line) for \
                each lock, or for NAME alone. With --json, one object a line: \
                {"name", "held", "pid", "run", "started", "command"}.

                Exit codes: 0 listed; 1 NAME is held (so a script can ask); 2 usage.
                """
        )

        @Argument(help: ArgumentHelp("One lock's name; all locks when left out.", valueName: "name"))
        var name: String?

        @Flag(help: "One JSON object a line.")
        var json = false

        func validate() throws {
            if let name, let problem = NamedLock.problem(with: name) { throw ValidationError("Invalid lock name: \(problem).") }
        }

        func run() throws {
            let names = name.map { [$0] } ?? NamedLock.names()
            var anyHeld = false
            for name in names {
                let (held, holder) = NamedLock.status(of: name)
                anyHeld = anyHeld || held
                if json {
                    var members: [JSON.Member] = [.init("name", .string(name)), .init("held", .bool(held))]
                    if let holder {
                        members += [
                            .init("pid", .int(Int64(holder.pid))), .init("run", .string(holder.runID)),
                            .init("started", .string(ISO8601.format(holder.started))), .init("command", .string(holder.command)),
                        ]
                    }
                    print(JSON.object(members).serialized())
                } else if held {
                    print("\(name): held by \(holder?.description ?? "someone")")
                } else {
                    print("\(name): free\(holder.map { " (last held by \($0.description))" } ?? "")")
                }
            }
            if names.isEmpty, !json { print("no locks in \(NamedLock.folder)") }
            Baton.exitProcess(name != nil && anyHeld ? 1 : 0)
        }
    }
}
