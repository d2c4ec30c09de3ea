import BatonCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Protocol/baton.proto` checked the way a user of another language meets it: `protoc`
/// generates Python from it at test time, and `Interop/baton_client.py` (written from the
/// .proto's comments and the README alone, with Python's ssl module and the `cryptography`
/// package) drives a real agent through everything the documentation promises. A missing
/// protoc or Python package fails the test: `scripts/test` installs them.
@Suite("The protocol as written: a Python client generated from baton.proto", .timeLimit(.minutes(3)))
struct ProtocolInteropTests {
    static let interopApp = "org.test.interop"
    static let privateApp = "org.test.private"
    /// The account's broker, as `baton account broker` writes it.
    static let brokerURL = "mqtts://hub.home:8883"

    /// One app anonymous callers may reach (with an echo service), one they may not. Launches
    /// are written to files in the agent's directory, for the test to read what arrived.
    static let config = #"""
        device{ name = "Interop Agent", kind = "tv", model = "Model P", manufacturer = "ACME" }
        local function record(file, uri, data)
          local f = assert(io.open("@DIR@/" .. file, "a"))
          f:write(uri, " ", tostring(data and data.title), "\n")
          f:close()
        end
        app{ id = "org.test.interop", name = "Interop", schemes = { "interop" }, anonymous = true,
             launch = function(uri, data) record("interop-launches", uri, data) return "success" end,
             services = { echo = function(msg) return msg end } }
        app{ id = "org.test.private", name = "Private", schemes = { "private" },
             launch = function(uri, data) record("private-launches", uri, data) return "success" end }
        """#

    /// The repository's root, from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The first executable `name` on `PATH`.
    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable ARGS` to completion in `directory`; killed after `limit` seconds, which
    /// fails the test.
    static func run(
        _ executable: String, _ arguments: [String], in directory: TemporaryDirectory, within limit: Double = 30,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CLIResult {
        let tag = UUID().uuidString.prefix(8)
        let process = try ChildProcess(
            executable, arguments, environment: ChildProcess.environment([:]), directory: directory.path,
            stdout: directory.file("\(tag).out"), stderr: directory.file("\(tag).err"))
        var code = await process.exit.wait(within: limit)
        if code == nil {
            Issue.record("\(executable) \(arguments.joined(separator: " ")) was still running after \(Int(limit)) s; killed", sourceLocation: sourceLocation)
            process.signal(SIGKILL)
            code = await process.exit.wait(within: 5)
        }
        return CLIResult(code: code ?? -1, stdout: directory.read("\(tag).out") ?? "", stderr: directory.read("\(tag).err") ?? "")
    }

    /// What the client must have checked, among the rest it prints.
    static let essentialChecks = [
        "TLS 1.3",
        "the account's CA signed the agent's certificate",
        "HelloAck speaks protocol version 1",
        "an anonymous caller sees only apps marked anonymous",
        "Launch of an anonymous app succeeds",
        "Launch of an app not marked anonymous is denied to an anonymous caller",
        "OpenService succeeds",
        "opening a channel id that is still open answers OPEN_STATUS_UNKNOWN with a detail",
        "the request carries every kind of Value",
        "every value comes back as sent (compared as a map)",
        "Ping is answered with Pong and the same nonce",
        "CloseService is not answered; a request on the closed channel gets APP_SERVICE_CONNECTION_CLOSED",
        "the printed invite code is six groups of four of the alphabet",
        "the code as a person may type it reads the same",
        "the agent's account is the one the invite code names (before the secret is sent)",
        "JoinResponse is SUCCESS",
        "the device certificate is for this client's key",
        "the device certificate names this client's id",
        "JoinResponse carries the account's broker (broker_url; broker_ca empty: the account's CA)",
        "the code works once",
        "after joining, an app not marked anonymous launches",
        "a length prefix of 11 bytes: Goodbye REASON_PROTOCOL_ERROR with a detail, then the agent closes",
        "a payload that is not a Frame: Goodbye REASON_PROTOCOL_ERROR with a detail, then the agent closes",
        "a length of 0: Goodbye REASON_PROTOCOL_ERROR with a detail, then the agent closes",
    ]

    @Test("a client generated by protoc for Python, written from baton.proto and the README: TLS, Hello, Describe, Launch, a channel with every Value type, Join with an invite code, and Goodbye for bad frames")
    func pythonClientFromTheProto() async throws {
        let work = try TemporaryDirectory("baton-protocol-interop")
        let protoc = try #require(Self.onPath("protoc"), "protoc is not installed: scripts/test installs it (apt protobuf-compiler)")
        let python = try #require(Self.onPath("python3"), "python3 is not installed: scripts/test installs it")
        let generated = work.file("generated")
        try FileManager.default.createDirectory(atPath: generated, withIntermediateDirectories: true)
        let proto = Self.root.appendingPathComponent("Protocol")
        let compiled = try await Self.run(
            protoc, ["--python_out=" + generated, "--proto_path=" + proto.path, proto.appendingPathComponent("baton.proto").path], in: work)
        try #require(compiled.code == 0, "protoc failed:\n\(compiled)")
        let modules = try await Self.run(python, ["-c", "import google.protobuf, cryptography.x509"], in: work)
        try #require(modules.code == 0, "python3 lacks protobuf or cryptography: scripts/test installs them (pip)\n\(modules)")

        let holder = try TestAccount()
        // An account with a broker, which the agent itself does not use: its JoinResponse carries it.
        let broker = try await runBaton(["account", "broker", Self.brokerURL], xdg: holder.home.path)
        try #require(broker.code == 0, "\(broker)")
        let agent = try await AgentProcess.start(config: Self.config, arguments: ["--no-broker"], home: holder.home.path)
        do {
            try await Self.drive(agent, of: holder, python: python, generated: generated, in: work)
        } catch {
            await agent.stop(SIGKILL)
            throw error
        }
        #expect(await agent.stop() == 0, "\(agent.log)")
    }

    /// Runs the Python client against `agent`, the device of `holder` that answers its invite
    /// codes, and checks what it reports and what the agent did.
    static func drive(
        _ agent: AgentProcess, of holder: TestAccount, python: String, generated: String, in work: TemporaryDirectory
    ) async throws {
        let (code, _) = try await EnrolmentCLITests.invite(holder)
        // As a person might type it: lower case, spaces for dashes, O for 0 and L for 1.
        let typed = code.lowercased().replacingOccurrences(of: "-", with: " ")
            .replacingOccurrences(of: "0", with: "o").replacingOccurrences(of: "1", with: "l")
        let script = Self.root.appendingPathComponent("Tests/BatonNetTests/Interop/baton_client.py").path
        let client = try await Self.run(python, [
            script, "--generated", generated, "--host", agent.address.host, "--port", String(agent.address.port),
            "--invite", code, "--invite-typed", typed, "--launch-app", Self.interopApp, "--private-app", Self.privateApp,
            "--service", "echo", "--broker-url", Self.brokerURL,
        ], in: work, within: 90)

        let lines = client.stdout.split(separator: "\n").compactMap { try? JSON.parse(String($0)) }
        var checks: [String: Bool] = [:]
        for line in lines {
            if let name = line["check"]?.stringValue, case .bool(let ok)? = line["ok"] { checks[name] = ok }
        }
        #expect(client.code == 0, "\(client)\nthe agent's log:\n\(agent.log)")
        for name in Self.essentialChecks {
            #expect(checks[name] == true, "not passed: \(name)\n\(client)")
        }
        #expect(lines.contains { $0["done"] == .bool(true) }, "\(client)")
        let deviceID = lines.compactMap { $0["device_id"]?.stringValue }.first
        #expect(deviceID != nil, "the client named no device id\n\(client)")

        // What the agent did for it.
        #expect(agent.directory.read("interop-launches") == "interop:from-python from python\n")
        #expect(agent.directory.read("private-launches") == "private:joined nil\n")
        let (shown, _) = try await EnrolmentCLITests.show(holder.home.path)
        let enrolled = shown?["enrolled"]?.arrayValue ?? []
        #expect(enrolled.contains { $0["name"] == .string("python client") && $0["id"]?.stringValue == deviceID }, "\(enrolled)")
        for reason in ["frame length prefix longer than 10 bytes", "malformed frame of 3 bytes", "empty frame"] {
            #expect(await eventually(within: 5) { agent.log.contains(reason) }, "not logged: \(reason)\n\(agent.log)")
        }
        // The agent serves on.
        let served = try await runBaton(["launch", agent.address.description, "private:after", "--app", Self.privateApp], xdg: holder.home.path)
        #expect(served.code == 0, "\(served)")
    }
}
