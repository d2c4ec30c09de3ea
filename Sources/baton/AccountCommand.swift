import ArgumentParser
import BatonCore
import BatonSecurity
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
        abstract: "Show the account this device belongs to.",
        discussion: """
            Baton makes an account on first use: a certificate authority (a P-256 key and \
            certificate) and this device's key and certificate signed by it, in \
            $XDG_CONFIG_HOME/baton (else ~/.config/baton; the folder 0700, keys 0600). Devices of \
            one account trust each other; the account's fingerprint is the SHA-256 of its \
            certificate.
            """,
        subcommands: [Show.self],
        defaultSubcommand: Show.self
    )

    /// `baton account show`.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the account's fingerprint and this device.",
            discussion: """
                With --json, one object: {"fingerprint": HEX, "device": {"id", "name", \
                "valid_until"}, "holds_account_key": BOOL, "folder": PATH}. Keys are never printed.
                """
        )

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials: DeviceCredentials
            do {
                credentials = try DeviceCredentials.loadOrCreate(in: folder, deviceName: AgentCommand.hostName())
            } catch {
                FailureReport.write(message: "\(error)", format: logging.logFormat)
                Baton.exitProcess(1)
            }
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
                    .init("folder", .string(folder.path)),
                ]).serialized())
            } else {
                print("""
                    account:      \(credentials.fingerprint.short)  (\(credentials.fingerprint.hex))
                    this device:  \(credentials.deviceID)  (\(name)), certificate valid until \(until)
                    account key:  \(credentials.accountKey != nil ? "held here: this device can enrol others" : "not here")
                    folder:       \(folder.path)
                    """)
            }
        }
    }
}
