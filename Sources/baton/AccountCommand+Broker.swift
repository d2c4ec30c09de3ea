import ArgumentParser
import BatonCore
import BatonSecurity
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AccountCommand {
    /// `baton account broker [URL [--ca FILE] | --clear]`.
    struct Broker: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "broker",
            abstract: "Set, show or clear the MQTT 5 broker the account's devices meet through.",
            discussion: """
                With URL, stores it in the configuration folder (broker.json, 0600) as the \
                account's broker: mqtts://HOST:PORT (TLS; port 8883 if none is given) or \
                mqtt://HOST[:PORT] (plaintext, 1883 by default: for a broker on a trusted host \
                only). The broker's server certificate is checked against the account's CA (what \
                baton broker config makes), or against --ca FILE (PEM) for a broker with a \
                certificate of its own. Devices that join afterwards get it: baton account join \
                stores it, and so does import of a device file from export-device. Devices \
                enrolled before do not learn it: run this command on each.

                With no URL, prints the broker commands use and what chose it: --no-broker, \
                --broker URL, the environment's BATON_BROKER (a URL, or off), then the account's. \
                --clear removes the account's.

                With --json, one object: {"effective": {"url", "origin", "plaintext", "ca"} or \
                null, "origin": "--no-broker" | "--broker" | "BATON_BROKER" | "account" | \
                "none", "account": {"url", "ca"} or null, "folder": PATH}; "ca" is "account" \
                or the broker's own CA as PEM.

                Examples:
                  baton account broker mqtts://hub.home:8883
                  baton account broker mqtts://broker.example.com --ca example-ca.pem
                  baton account broker --json
                """
        )

        @Argument(help: ArgumentHelp("The broker: mqtts://HOST:PORT or mqtt://HOST[:PORT].", valueName: "url"))
        var url: String?

        @Option(help: ArgumentHelp("The PEM file of the CA the broker's server certificate chains to, when it is not the account's.", valueName: "file"))
        var ca: String?

        @Flag(help: "Remove the account's broker.")
        var clear = false

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            if clear, url != nil || ca != nil { throw ValidationError("--clear takes no URL and no --ca.") }
            if ca != nil, url == nil { throw ValidationError("--ca FILE goes with a URL: baton account broker URL --ca FILE.") }
            if let url {
                do { _ = try BrokerSettings(url: url) } catch { throw ValidationError("Invalid broker URL: \(error)") }
            }
            do {
                _ = try EffectiveBroker.resolve(noBroker: false, option: nil, environment: BrokerOptions.environment, account: { nil })
            } catch let error as BrokerSettings.Invalid {
                throw ValidationError(error.description)
            }
        }

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            if clear {
                let had = AccountCommand.attempt(logging) { () throws -> Bool in
                    let had = try? folder.broker()
                    try folder.setBroker(nil)
                    return had != nil
                }
                if !json { print(had ? "removed the account's broker" : "the account has no broker") }
            } else if let url {
                let settings = AccountCommand.attempt(logging) { () throws -> BrokerSettings in
                    let pem = try ca.map { path -> String in
                        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                            throw SecurityError.storage("cannot read the broker's CA \(path)")
                        }
                        return text
                    }
                    let settings = try BrokerSettings(url: url, caPEM: pem)
                    try folder.withLock { try folder.setBroker(settings) }
                    return settings
                }
                if settings.isPlaintext {
                    StandardError.write("baton: \(settings.url) is plaintext: use it only for a broker on a host and network you trust (devices' messages stay sealed, but who talks to whom shows)\n")
                }
                if !json {
                    print("the account's broker: \(settings.url)\(settings.caPEM == nil ? "" : " (with its own CA)")")
                    print("devices that join from now on (account join, or import of a device file) get it; devices enrolled before need: baton account broker \(settings.url)")
                }
            }
            show(folder, printText: !json && url == nil && !clear)
        }

        /// Prints the effective broker and the account's (text when `printText`, else JSON
        /// when --json).
        private func show(_ folder: ConfigurationFolder, printText: Bool) {
            let stored = AccountCommand.attempt(logging) { try folder.broker() }
            // BATON_BROKER was checked in validate().
            let effective = AccountCommand.attempt(logging) {
                try EffectiveBroker.resolve(noBroker: false, option: nil, environment: BrokerOptions.environment, account: { stored })
            }
            if json {
                func ca(_ settings: BrokerSettings) -> JSON { .string(settings.caPEM ?? "account") }
                let effectiveJSON: JSON = effective.settings.map { settings in
                    .object([
                        .init("url", .string(settings.url)), .init("origin", .string(effective.origin.rawValue)),
                        .init("plaintext", .bool(settings.isPlaintext)), .init("ca", ca(settings)),
                    ])
                } ?? .null
                let accountJSON: JSON = stored.map { .object([.init("url", .string($0.url)), .init("ca", ca($0))]) } ?? .null
                print(JSON.object([
                    .init("effective", effectiveJSON), .init("origin", .string(effective.origin.rawValue)),
                    .init("account", accountJSON), .init("folder", .string(folder.path)),
                ]).serialized())
            } else if printText {
                print("broker: \(effective.description)")
                if let settings = effective.settings {
                    print("ca:     \(settings.caPEM == nil ? "the account's CA" : "the broker's own CA")")
                }
                if effective.origin != .account, let stored {
                    print("account's broker: \(stored.url)")
                }
                if effective.settings == nil, stored == nil {
                    print("set one with: baton account broker mqtts://HOST:8883 (see baton broker config for a mosquitto of your own)")
                }
            }
        }
    }
}
