import ArgumentParser
import BatonClient
import BatonCore
import BatonNet
import BatonSecurity
import NIOCore
import NIOPosix

extension AccountCommand {
    /// `baton account join CODE`.
    struct Join: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "join",
            abstract: "Join an account with a code from baton account invite.",
            discussion: """
                Finds an agent of the account the code names (over mDNS, or at --from \
                HOST:PORT), checks in the TLS handshake that it belongs to that account, and \
                asks it for this device's certificate. The code works once. This device keeps \
                its id and key; its previous account's files move to replaced-TIME/ in the \
                configuration folder. The account's broker (baton account broker), if it has \
                one, becomes this device's too; one this Baton cannot use is left out, saying \
                why on stderr, and the join stands. Restart this device's agent afterwards.

                With --json, one object: {"account": HEX, "device": {"id", "name"}, \
                "agent": "HOST:PORT", "broker": URL or null}.
                """
        )

        @Argument(help: ArgumentHelp("The code baton account invite printed.", valueName: "code"))
        var code: String

        @Option(help: ArgumentHelp("The inviting device's agent, when mDNS cannot find it.", valueName: "host:port"))
        var from: String?

        @Option(help: ArgumentHelp("This device's name in the account (default: the host name).", valueName: "name"))
        var name: String?

        @Option(help: ArgumentHelp("How long to look for the inviting agent over mDNS: 3s, 10s.", valueName: "duration"))
        var timeout = "5s"

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            if let from, DeviceAddress(from) == nil {
                throw ValidationError("Invalid --from '\(from)': use HOST:PORT, e.g. 192.168.1.20:47300.")
            }
            guard DurationText.parse(timeout) != nil else {
                throw ValidationError("Invalid --timeout '\(timeout)': use a duration like 3s or 10s.")
            }
            // Checked here so a mistyped code is a usage error; the message never repeats it.
            _ = try parsedCode()
        }

        private func parsedCode() throws -> InviteCode {
            do {
                return try InviteCode(parsing: code)
            } catch {
                throw ValidationError("Invalid code: \(error).")
            }
        }

        func run() throws {
            logging.bootstrap()
            let invite = try parsedCode()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let deviceName = name ?? AgentCommand.hostName()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            var options = BatonClient.Options()
            options.security = AccountCommand.attempt(logging) { try ConnectionSecurity.forCommandLine(insecure: false) }
            let client = BatonClient(eventLoop: group.next(), options: options)
            let candidates = from.flatMap { DeviceAddress($0) }.map { [$0] } ?? findAgents(of: invite, client: client)
            guard !candidates.isEmpty else {
                AccountCommand.fail(
                    "no agent of the inviting account was found over mDNS; is it running? Give its address with --from HOST:PORT",
                    logging)
            }
            var problems: [String] = []
            for address in candidates {
                do {
                    let grant = try client.join(
                        invite, at: address, deviceID: credentials.deviceID, deviceName: deviceName,
                        publicKey: credentials.key.publicKey
                    ).wait()
                    let joined = AccountCommand.attempt(logging) {
                        try DeviceCredentials.join(
                            accountCertificate: grant.accountCertificate, deviceCertificate: grant.deviceCertificate,
                            revocationList: grant.revocationList, broker: grant.broker, in: folder)
                    }
                    if let problem = grant.brokerProblem {
                        // One line, whatever the agent sent.
                        let line = String(problem.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
                        StandardError.write("baton: the account's broker the agent sent cannot be used, so none is stored: \(line); set one with baton account broker URL\n")
                    }
                    report(joined, name: deviceName, broker: grant.broker, agent: address)
                    return
                } catch let error as JoinError {
                    // Another agent of the account may hold its key; anything else is final.
                    guard case .notSupported = error, candidates.count > 1 else { AccountCommand.fail("\(error)", logging) }
                    problems.append("\(address): \(error)")
                }
            }
            AccountCommand.fail(problems.joined(separator: "; "), logging)
        }

        /// Addresses of agents advertising the account the code names.
        private func findAgents(of invite: InviteCode, client: BatonClient) -> [DeviceAddress] {
            var options = DeviceDirectory.Options()
            options.liveness = .seconds(3600)
            let directory = DeviceDirectory(client: client, options: options)
            let wait = TimeAmount(DurationText.parse(timeout) ?? .seconds(5))
            let found = try? client.eventLoop.flatSubmit { () -> EventLoopFuture<[RemoteDevice]> in
                let promise = client.eventLoop.makePromise(of: [RemoteDevice].self)
                func matching() -> [RemoteDevice] {
                    directory.devices(matching: DeviceFilter(status: nil, authorization: .anonymous)).filter {
                        AccountFingerprint(hex: $0.account).map(invite.matches) ?? false
                    }
                }
                var settled = false
                func settle() {
                    guard !settled else { return }
                    settled = true
                    promise.succeed(matching())
                }
                directory.start()
                // The first agent of the account is enough; none at all waits for `timeout`.
                let watch = directory.watch(DeviceFilter(status: nil, authorization: .anonymous)) { _ in
                    if !matching().isEmpty { settle() }
                }
                let settleLater = NIOLoopBound(settle, eventLoop: client.eventLoop)
                client.eventLoop.scheduleTask(in: wait) { settleLater.value() }
                return promise.futureResult.always { _ in
                    directory.unwatch(watch)
                    directory.stop()
                }
            }.wait()
            return (found ?? []).flatMap(\.endpoints)
        }

        private func report(_ joined: DeviceCredentials, name: String, broker: BrokerSettings?, agent: DeviceAddress) {
            if json {
                print(JSON.object([
                    .init("account", .string(joined.fingerprint.hex)),
                    .init("device", .object([.init("id", .string(joined.deviceID)), .init("name", .string(name))])),
                    .init("agent", .string(agent.description)),
                    .init("broker", broker.map { .string($0.url) } ?? .null),
                ]).serialized())
            } else {
                print("Joined account \(joined.fingerprint.short) as \(name) (\(joined.deviceID)), through the agent at \(agent).")
                if let broker { print("The account's broker: \(broker.url)") }
                print("Restart this device's agent (baton agent) so that it serves with the new certificate.")
            }
        }
    }

    /// Prints `message` as the failure and exits 1.
    static func fail(_ message: String, _ logging: LoggingOptions) -> Never {
        FailureReport.write(message: message, format: logging.logFormat)
        Baton.exitProcess(1)
    }
}
