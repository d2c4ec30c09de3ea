import Foundation
import Testing

/// `arg` and `...`: what the script is given, and how `baton run`'s own flags end at the
/// script.
@Suite("Script arguments")
struct ArgumentsTests {
    /// Prints `n`, `#arg`, every `arg[i]` from 0 and the varargs, one per line.
    static let dump = """
        print("n=" .. select("#", ...) .. " #arg=" .. #arg)
        for i = 0, #arg do print(i .. "=" .. arg[i]) end
        local dots = table.pack(...)
        for i = 1, dots.n do print("..." .. i .. "=" .. dots[i]) end
        """

    private func expected(_ name: String, _ args: [String]) -> String {
        var out = "n=\(args.count) #arg=\(args.count)\n0=\(name)\n"
        for (i, a) in args.enumerated() { out += "\(i + 1)=\(a)\n" }
        for (i, a) in args.enumerated() { out += "...\(i + 1)=\(a)\n" }
        return out
    }

    @Test("arg[0] is the script as given; arg[1..n] and ... are the arguments")
    func plain() async throws {
        let args = ["one", "two words", "", "é😀", "3"]
        let r = try await runScript(Self.dump, args: args)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == expected("x.lua", args), "\(r)")
    }

    @Test("arg[-n...-1] are the words before the script, as the stock lua sets them")
    func wordsBeforeTheScript() async throws {
        let r = try await runScript(
            "print(arg[-3], arg[-2], arg[-1], arg[0], arg[1])", flags: ["--timeout", "5s"], args: ["a"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "run\t--timeout\t5s\tx.lua\ta\n", "\(r)")
    }

    @Test("no arguments: arg holds only the script name and ... is empty")
    func none() async throws {
        let r = try await runScript(Self.dump)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "n=0 #arg=0\n0=x.lua\n", "\(r)")
    }

    @Test("arguments are strings, even when they look like numbers")
    func strings() async throws {
        let r = try await runScript("print(type(arg[1]), type((...)), math.type(arg[1]))", args: ["42"])
        #expect(r.stdout == "string\tstring\tnil\n", "\(r)")
    }

    @Test("the script's path is kept as given")
    func pathAsGiven() async throws {
        let dir = try ScriptDirectory()
        try dir.write("x.lua", "print(arg[0])")
        let r = try await dir.baton("run", "./x.lua")
        #expect(r.stdout == "./x.lua\n", "\(r)")
        let absolute = dir.url.appendingPathComponent("x.lua").path
        let r2 = try await dir.baton("run", absolute)
        #expect(r2.stdout == absolute + "\n", "\(r2)")
    }

    @Test("everything after the script goes to the script, baton's own flags included", arguments: [
        ["--timeout", "1s", "-v", "-q", "--log-format", "xml"],
        ["-e", "error('not run')", "--", "-"],
        ["--help", "-h", "--version"],
        ["--max-memory", "1", "--bogus"],
    ])
    func flagsAfterScript(_ args: [String]) async throws {
        let r = try await runScript(Self.dump, args: args)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == expected("x.lua", args), "\(r)")
        #expect(r.stderr == "", "\(r)")
    }

    @Test("flags before the script are baton's, flags after it are the script's")
    func flagsBeforeAndAfter() async throws {
        let r = try await runScript(
            "baton.log.debug('visible') print(...)", flags: ["-v", "--timeout", "30s"], args: ["-q", "--timeout", "1ms"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "-q\t--timeout\t1ms\n", "\(r)")
        #expect(TextLogLine(r.stderrLines.first ?? "")?.message == "visible", "-v before the script is baton's\n\(r)")
    }

    @Test("-e: arg[0] and the chunk name are (command line); the rest are arguments")
    func chunkArguments() async throws {
        let r = try await baton("run", "-e", Self.dump, "a", "b c", "x.lua")
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == expected("(command line)", ["a", "b c", "x.lua"]), "\(r)")
    }

    @Test("-e: after `--` or after the first argument, everything goes to the chunk, flags included", arguments: [
        ["--", "-v"], ["--", "--timeout", "1s"], ["a", "-v"], ["a", "--bogus", "x"], ["--", "-q", "--log-format", "json"],
    ])
    func chunkFlags(_ args: [String]) async throws {
        let r = try await baton(["run", "-e", Self.dump] + args)
        let passed = args.first == "--" ? Array(args.dropFirst()) : args
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == expected("(command line)", passed), "\(r)")
        #expect(r.stderr == "", "\(r)")
    }

    @Test("-e: flags right after the chunk are baton's own")
    func flagsAfterChunk() async throws {
        let verbose = try await baton("run", "-e", "baton.log.debug('seen') print(select('#', ...))", "-v")
        #expect(verbose.exitCode == 0, "\(verbose)")
        #expect(verbose.stdout == "0\n", "\(verbose)")
        #expect(verbose.stderr.contains("DEBUG seen"), "\(verbose)")
        let bogus = try await baton("run", "-e", "print(1)", "--bogus", "x")
        #expect(bogus.exitCode == 2, "\(bogus)")
        #expect(bogus.stderr.contains("Unknown option '--bogus'"), "\(bogus)")
    }

    @Test("baton's flags before -e still apply")
    func flagsBeforeChunk() async throws {
        let r = try await baton("run", "--timeout", "500ms", "-e", "print(...) while true do end", "a")
        #expect(r.exitCode == 3, "\(r)")
        #expect(r.stdout == "a\n", "\(r)")
    }

    @Test("-: the script comes from stdin, its arguments from the command line")
    func stdinScript() async throws {
        let r = try await baton("run", "-", "1", "-v", stdin: Self.dump)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == expected("-", ["1", "-v"]), "\(r)")
        #expect(r.stderr == "", "\(r)")
    }

    @Test("a script file read whole, with a shebang line and no final newline")
    func shebang() async throws {
        let r = try await runScript("#!/usr/bin/env baton run\nprint(...)", args: ["ok"])
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "ok\n", "\(r)")
    }

    @Test("the script can read its own standard input")
    func scriptReadsStdin() async throws {
        let r = try await runScript("for line in io.lines() do print('[' .. line .. ']') end", stdin: "a\nb\n")
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "[a]\n[b]\n", "\(r)")
    }

    @Test("require 'baton' returns the global baton table")
    func requireBaton() async throws {
        let r = try await runScript("""
            local b = require "baton"
            print(rawequal(b, baton), rawequal(require("baton"), b), type(b.spawn), type(b.json.encode))
            """)
        #expect(r.exitCode == 0, "\(r)")
        #expect(r.stdout == "true\ttrue\tfunction\tfunction\n", "\(r)")
    }
}

/// `baton ARGS...` with an array, for parameterised tests.
func baton(_ arguments: [String], stdin: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> BatonResult {
    let dir = try ScriptDirectory()
    return try await BatonProcess.run(
        arguments, stdin: stdin.map { Data($0.utf8) }, directory: dir.url, sourceLocation: sourceLocation)
}
