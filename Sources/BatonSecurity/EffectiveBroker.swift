/// The broker a command uses, and what chose it. First of: `--no-broker` (none), `--broker
/// URL`, the environment's `BATON_BROKER` (a URL, or `off` for none), the account's
/// (`baton account broker URL`).
public struct EffectiveBroker: Sendable, Hashable {
    /// What chose the broker (or chose none).
    public enum Origin: String, Sendable, Hashable {
        /// `--no-broker` on the command line.
        case noBrokerFlag = "--no-broker"
        /// `--broker URL` on the command line.
        case brokerOption = "--broker"
        /// `BATON_BROKER` in the environment.
        case environment = "BATON_BROKER"
        /// The account's configuration folder.
        case account = "account"
        /// Nothing: no broker anywhere.
        case unset = "none"
    }

    /// The broker, or nil for none.
    public let settings: BrokerSettings?
    /// What chose it.
    public let origin: Origin

    public init(settings: BrokerSettings?, origin: Origin) {
        self.settings = settings
        self.origin = origin
    }

    /// The name of the environment variable.
    public static let variable = "BATON_BROKER"

    /// Resolves the choice. A URL from `--broker` or `BATON_BROKER` naming the account's
    /// broker keeps the account's CA for it; any other uses the account's CA. An empty
    /// `environment` counts as unset. `account` is read only when needed.
    /// Throws ``BrokerSettings/Invalid`` naming the option or variable that is wrong.
    public static func resolve(
        noBroker: Bool, option: String?, environment: String?, account: () throws -> BrokerSettings?
    ) throws -> EffectiveBroker {
        if noBroker { return EffectiveBroker(settings: nil, origin: .noBrokerFlag) }
        func parse(_ url: String, _ what: String, _ origin: Origin) throws -> EffectiveBroker {
            let settings: BrokerSettings
            do { settings = try BrokerSettings(url: url) } catch {
                throw BrokerSettings.Invalid("Invalid \(what): \(error)")
            }
            // The account's CA for its own broker, whichever way it was named.
            if let stored = try? account(), stored.url == settings.url {
                return EffectiveBroker(settings: stored, origin: origin)
            }
            return EffectiveBroker(settings: settings, origin: origin)
        }
        if let option { return try parse(option, "--broker", .brokerOption) }
        if let environment, !environment.isEmpty {
            if environment.lowercased() == "off" { return EffectiveBroker(settings: nil, origin: .environment) }
            return try parse(environment, "\(variable) (a URL, or off)", .environment)
        }
        if let stored = try account() { return EffectiveBroker(settings: stored, origin: .account) }
        return EffectiveBroker(settings: nil, origin: .unset)
    }

    /// `mqtts://hub.home:8883 (from BATON_BROKER)`, `none (--no-broker)`, `none`.
    public var description: String {
        switch (settings, origin) {
        case (nil, .unset): return "none"
        case (nil, .environment): return "none (\(Self.variable)=off)"
        case (nil, _): return "none (\(origin.rawValue))"
        case (let settings?, .account): return "\(settings.url) (from the account)"
        case (let settings?, _): return "\(settings.url) (from \(origin.rawValue))"
        }
    }
}
