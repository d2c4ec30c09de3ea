import ArgumentParser
import BatonCore
import BatonSecurity
import NIOCore
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `baton account`: the account this device belongs to.
struct AccountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "The account this device belongs to: show it, enrol devices into it, revoke them.",
        discussion: """
            Baton makes an account on first use: a certificate authority (a P-256 key and \
            certificate) and this device's key and certificate signed by it, in \
            $XDG_CONFIG_HOME/baton (else ~/.config/baton; the folder 0700, keys 0600). Devices of \
            one account trust each other; the account's fingerprint is the SHA-256 of its \
            certificate.

            To add a device, run baton account invite on the device that made the account and \
            baton account join CODE on the new one, while the first device's agent runs; with no \
            network path between them, use export-device and import instead. revoke stops \
            trusting a device. known lists the devices this one has met, pinned to what their \
            handshakes proved (discovery's word is only a hint); forget lets one be pinned afresh.
            """,
        subcommands: [Show.self, Invite.self, Join.self, ExportDevice.self, Import.self, Revoke.self, Known.self, Forget.self, Broker.self],
        defaultSubcommand: Show.self
    )

    /// `baton account show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the account's fingerprint and this device.",
            discussion: """
                With --json, one object: {"fingerprint": HEX, "device": {"id", \
                "certificate_subject", "valid_until"}, "holds_account_key": BOOL, "enrolled": \
                [{"id", "name", "serial", "enrolled", "revoked"}], "revocation_list_version": N, \
                "folder": PATH}. Keys are never printed.
                """
        )

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let (enrolled, revocations) = AccountCommand.attempt(logging) {
                (try EnrolledDevice.all(in: folder),
                 try RevocationList.load(from: folder, accountCertificate: credentials.accountCertificate))
            }
            func isRevoked(_ device: EnrolledDevice) -> Bool { revocations.entries.contains { $0.id == device.id } }
            let name = credentials.certificate.subject.description
            let until = ISO8601.format(credentials.certificate.notValidAfter)
            if json {
                print(JSON.object([
                    .init("fingerprint", .string(credentials.fingerprint.hex)),
                    .init("device", .object([
                        .init("id", .string(credentials.deviceID)), .init("certificate_subject", .string(name)),
                        .init("valid_until", .string(until)),
                    ])),
                    .init("holds_account_key", .bool(credentials.accountKey != nil)),
                    .init("enrolled", .array(enrolled.map { device in
                        .object([
                            .init("id", .string(device.id)), .init("name", .string(device.name)),
                            .init("serial", .string(device.serial)), .init("enrolled", .string(ISO8601.format(device.enrolled))),
                            .init("revoked", .bool(isRevoked(device))),
                        ])
                    })),
                    .init("revocation_list_version", .int(Int64(revocations.version))),
                    .init("folder", .string(folder.path)),
                ]).serialized())
            } else {
                print("""
                    account:      \(credentials.fingerprint.short)  (\(credentials.fingerprint.hex))
                    this device:  \(credentials.deviceID)  (\(name)), certificate valid until \(until)
                    account key:  \(credentials.accountKey != nil ? "held here: this device can enrol others" : "not here")
                    folder:       \(folder.path)
                    """)
                for device in enrolled {
                    print("enrolled:     \(device.name)  \(device.id)  \(ISO8601.format(device.enrolled))\(isRevoked(device) ? "  REVOKED" : "")")
                }
            }
        }
    }
}

extension AccountCommand {
    /// This device's credentials, made on first use; exit 1 with the reason if that fails.
    static func credentials(_ folder: ConfigurationFolder, _ logging: LoggingOptions) -> DeviceCredentials {
        attempt(logging) { try DeviceCredentials.loadOrCreate(in: folder, deviceName: AgentCommand.hostName()) }
    }

    /// `body`'s result, or exit 1 with its error as the message.
    static func attempt<T>(_ logging: LoggingOptions, _ body: () throws -> T) -> T {
        do {
            return try body()
        } catch {
            fail("\(error)", logging)
        }
    }

    /// `baton account invite`.
    struct Invite: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "invite",
            abstract: "Make a one-time code that lets another device join the account.",
            discussion: """
                Run on the device that made the account (it holds the account's key). On the new \
                device, run baton account join CODE while this device's agent runs; the code \
                works once, until it expires, and pins this account, so the new device cannot be \
                fooled into joining another. Only a hash of the code is kept here.

                With --json, one object: {"code": CODE, "expires": TIME, "account": FINGERPRINT}.

                Example:
                  baton account invite --expires 30m
                """
        )

        @Option(help: ArgumentHelp("How long the code works: 10m (the default), 30s, 2h; at most 168h (7 days).", valueName: "duration"))
        var expires = "10m"

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        /// The longest an invite may last: a code that lies around is a way in.
        static let longest = Duration.seconds(7 * 86_400)

        func validate() throws {
            guard let duration = DurationText.parse(expires), duration >= .seconds(1), duration <= Self.longest else {
                throw ValidationError("Invalid --expires '\(expires)': use a duration from 1s to 168h (7 days), like 10m or 2h.")
            }
        }

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let duration = DurationText.parse(expires) ?? .seconds(600)
            let seconds = duration.inSeconds
            let (code, until) = AccountCommand.attempt(logging) { try credentials.invite(in: folder, expiresIn: seconds) }
            if json {
                print(JSON.object([
                    .init("code", .string(code.text)), .init("expires", .string(ISO8601.format(until))),
                    .init("account", .string(credentials.fingerprint.hex)),
                ]).serialized())
            } else {
                print("""
                    Invite code: \(code.text)  (one use, expires \(ISO8601.format(until)))
                    On the new device: baton account join \(code.text)  [--from HOST:PORT]
                    This device's agent must be running to answer.
                    """)
            }
        }
    }

    /// `baton account export-device NAME`.
    struct ExportDevice: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export-device",
            abstract: "Enrol a device by hand: write a device file for it to standard output.",
            discussion: """
                For machines with no network path to this one. Run on the device that made the \
                account (it holds the account's key); carry the file to the new device and run \
                baton account import FILE there. The file holds the new device's private key: \
                keep it secret, and delete it once imported. --output FILE writes a new file \
                0600; standard output redirected to a file is made 0600 before the key is \
                written.

                Example:
                  baton account export-device "Living Room TV" --output tv.baton
                """
        )

        @Argument(help: "The new device's name.")
        var name: String

        @Option(name: .shortAndLong, help: ArgumentHelp("Write the device file here (mode 0600) instead of standard output.", valueName: "file"))
        var output: String?

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("The device's name is empty.") }
        }

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let text = AccountCommand.attempt(logging) { try credentials.exportDevice(named: name, in: folder).serialized() }
            AccountCommand.attempt(logging) {
                if let output { try PrivateOutput.write(text, to: output) } else { try PrivateOutput.writeStandardOutput(text) }
            }
            StandardError.write("baton: wrote a device file for \"\(name)\" (it holds a private key: keep it secret)\n")
        }
    }

    /// `baton account import FILE`.
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Join the account a device file comes from.",
            discussion: """
                Makes this device the one the file describes (its id, key and certificate, in the \
                file's account). The files replaced are moved to replaced-TIME/ in the \
                configuration folder, not deleted. Restart the agent afterwards. - reads \
                standard input. A file that group or others may read is refused (it holds a \
                private key, which may have been read): chmod 600 it if only you could.
                """
        )

        @Argument(help: ArgumentHelp("The device file from baton account export-device, or -.", valueName: "file"))
        var file: String

        @OptionGroup var logging: LoggingOptions

        func run() throws {
            logging.bootstrap()
            let text: String
            if file == "-" {
                text = AnyIterator { readLine(strippingNewline: false) }.joined()
            } else {
                // The file holds the device's private key: one others could read may have been.
                text = AccountCommand.attempt(logging) {
                    guard let text = try ConfigurationFolder.readPrivateFile(file) else {
                        throw SecurityError.storage("cannot read \(file): no such file")
                    }
                    return text
                }
            }
            let bundle = AccountCommand.attempt(logging) { try DeviceBundle.parse(text) }
            let credentials = AccountCommand.attempt(logging) { try DeviceCredentials.install(bundle, in: .standard) }
            print("joined account \(credentials.fingerprint.short) as device \(credentials.deviceID)")
            if let broker = bundle.broker { print("the account's broker: \(broker.url)") }
        }
    }

    /// `baton account revoke DEVICE`.
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Stop trusting an enrolled device.",
            discussion: """
                Adds the device (a name or id from baton account show) to the account's \
                revocation list, signed with the account's key, and pushes the list at once to \
                the account's devices that discovery finds (mDNS and --peer) within --within: \
                each drops the device's connections before it answers. The output says which \
                were reached and which not. Agents pass the list on when they meet, so one not \
                reached learns it when a device of the account next connects to it. Run on \
                the device that made the account.

                With --json, one object: {"revoked": {"id", "name"}, "revocation_list_version": \
                N, "pushed": [{"id", "name", "address"}], "not_reached": [{"id", "name", \
                "address", "reason"}], "problems": [TEXT]} (problems: what discovery could not \
                look at, such as a --peer that did not answer).
                """
        )

        @Argument(help: ArgumentHelp("The device's name or id.", valueName: "device"))
        var device: String

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @Flag(inversion: .prefixedNo, help: "Push the new list to the account's devices discovery finds.")
        var push = true

        @Option(help: ArgumentHelp("How long to look for the account's devices, and to reach each: 2s (the default), 500ms, 10s.", valueName: "duration"))
        var within = "2s"

        @OptionGroup var discovery: DiscoveryOptions

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard let duration = DurationText.parse(within), duration > .zero, duration <= .seconds(600) else {
                throw ValidationError("Invalid --within '\(within)': use a duration above zero and up to 10m, like 500ms, 2s or 10s.")
            }
        }

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let (revoked, list) = AccountCommand.attempt(logging) { try credentials.revoke(device, in: folder) }
            if !json { print("revoked \(revoked.name) (\(revoked.id)); revocation list version \(list.version)") }
            let (met, problems) = push ? pushList(skipping: [credentials.deviceID.lowercased(), revoked.id.lowercased()]) : ([], [])
            if json {
                func object(_ result: RevocationPush.Result) -> JSON {
                    var members: [JSON.Member] = [
                        .init("id", .string(result.device.info.id)), .init("name", .string(result.device.info.name)),
                        .init("address", .string(result.device.endpoints.first.map { "\($0.host):\($0.port)" } ?? "")),
                    ]
                    if let failure = result.failure { members.append(.init("reason", .string(failure))) }
                    return .object(members)
                }
                print(JSON.object([
                    .init("revoked", .object([.init("id", .string(revoked.id)), .init("name", .string(revoked.name))])),
                    .init("revocation_list_version", .int(Int64(list.version))),
                    .init("pushed", .array(met.filter { $0.failure == nil }.map(object))),
                    .init("not_reached", .array(met.filter { $0.failure != nil }.map(object))),
                    .init("problems", .array(problems.map(JSON.string))),
                ]).serialized())
                return
            }
            guard push else { return }
            for problem in problems { print("not reached: \(problem)") }
            if met.isEmpty {
                print("found no other device of the account within \(within) to push the list to; agents learn it when a device of the account that holds it next connects to them")
            }
            for result in met {
                if let failure = result.failure {
                    print("not reached: \(RevocationPush.describe(result.device)): \(failure)")
                } else {
                    print("pushed to: \(RevocationPush.describe(result.device))")
                }
            }
        }

        /// Pushes the list now in the folder to the account's devices found (see ``RevocationPush``).
        private func pushList(skipping ids: Set<String>) -> (results: [RevocationPush.Result], problems: [String]) {
            let client = RevocationPush.makeClient(connectTimeout: TimeAmount(DurationText.parse(within) ?? .seconds(2)), logging)
            defer { client.finish() }
            return AccountCommand.attempt(logging) {
                try RevocationPush.push(
                    with: client, discovery: discovery, within: TimeAmount(DurationText.parse(within) ?? .seconds(2)), skipping: ids)
            }
        }
    }
}
