import ArgumentParser
import BatonSecurity
import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `--broker URL` and `--no-broker`, shared by the agent and every command that reaches
/// devices: which MQTT 5 broker to meet the account's devices through, over the account's.
struct BrokerOptions: ParsableArguments {
    @Option(name: .customLong("broker"), help: ArgumentHelp(
        "The MQTT 5 broker to reach devices through, instead of the account's (baton account broker): mqtts://HOST:PORT, or mqtt://HOST[:PORT] for a plaintext broker on a trusted host. BATON_BROKER does the same (a URL, or off).",
        valueName: "url"))
    var url: String?

    @Flag(name: .customLong("no-broker"), help: "Use no broker, whatever the account or BATON_BROKER says.")
    var noBroker = false

    func validate() throws {
        if noBroker, url != nil { throw ValidationError("Give --broker URL or --no-broker, not both.") }
        // A bad URL is a usage error at once, not a failure when the broker is first needed;
        // the account's was checked when it was stored.
        do {
            _ = try EffectiveBroker.resolve(noBroker: noBroker, option: url, environment: Self.environment, account: { nil })
        } catch let error as BrokerSettings.Invalid {
            throw ValidationError(error.description)
        }
    }

    /// `BATON_BROKER`, if set.
    static var environment: String? { ProcessInfo.processInfo.environment[EffectiveBroker.variable] }

    /// The broker this command uses (see ``EffectiveBroker``), logged at debug when anything
    /// names one (or says none), and the one its clients reach devices through
    /// (``CommandBroker``). Exits 1 saying
    /// why when the account's stored broker cannot be read. Call from `run()`, after
    /// bootstrapping the logs.
    @discardableResult
    func resolve(_ logging: LoggingOptions) -> EffectiveBroker {
        let effective = AccountCommand.attempt(logging) {
            try EffectiveBroker.resolve(
                noBroker: noBroker, option: url, environment: Self.environment, account: { try ConfigurationFolder.standard.broker() })
        }
        // Nothing said when nothing anywhere names a broker: most runs, and their first lines.
        if effective.origin != .unset { Logger(label: "baton.broker").debug("broker: \(effective.description)") }
        CommandBroker.use(effective)
        return effective
    }
}
