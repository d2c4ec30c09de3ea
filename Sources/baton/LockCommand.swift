import ArgumentParser
import BatonCore
import BatonLua
import Foundation

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
            who took it last, for people; whether it is held is the kernel's answer. A lock \
            folder must belong to you or root and not be writable by group or others, and a \
            lock file must be a plain file (a symbolic link is refused, never followed): \
            otherwise runs that take a lock exit 2 saying why.
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

                A lock's file stays after its last run, saying who held it; --prune first \
                removes the files of the locks nobody holds (never a held one: each is removed \
                while baton holds it), says how many, and lists what is left.

                Exit codes: 0 listed; 1 NAME is held (so a script can ask); 2 usage, or a lock \
                folder others may write to (refused, as runs refuse it).
                """
        )

        @Argument(help: ArgumentHelp("One lock's name; all locks when left out.", valueName: "name"))
        var name: String?

        @Flag(help: "One JSON object a line.")
        var json = false

        @Flag(help: "First remove the files of the locks nobody holds (never a held one).")
        var prune = false

        func validate() throws {
            if let name, let problem = NamedLock.problem(with: name) { throw ValidationError("Invalid lock name: \(problem).") }
            if name != nil && prune { throw ValidationError("--prune goes without NAME: it removes every lock nobody holds.") }
        }

        func run() throws {
            do {
                // No folder yet: no locks, nothing to distrust.
                if FileManager.default.fileExists(atPath: NamedLock.folder) { try NamedLock.checkFolder() }
            } catch {
                // A folder others may write to says nothing trustworthy of its locks.
                StandardError.write("baton: \(error)\n")
                Baton.exitProcess(ErrorClass.usage.exitCode)
            }
            if prune, FileManager.default.fileExists(atPath: NamedLock.folder) {
                do {
                    let removed = try NamedLock.prune()
                    if !json { print("pruned \(removed.count) lock\(removed.count == 1 ? "" : "s") nobody held\(removed.isEmpty ? "" : ": " + removed.joined(separator: ", "))") }
                } catch {
                    StandardError.write("baton: \(error)\n")
                    Baton.exitProcess(ErrorClass.usage.exitCode)
                }
            }
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
