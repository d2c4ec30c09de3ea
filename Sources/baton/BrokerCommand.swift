import ArgumentParser

/// `baton broker`: a broker of the account's own.
struct BrokerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Set up an MQTT 5 broker (mosquitto) for the account's devices on other networks.",
        discussion: """
            Devices that cannot see each other on a LAN meet through an MQTT 5 broker. Everything \
            they say through it is sealed end to end; the broker only passes it on. baton broker \
            config writes what a mosquitto needs to serve this account; baton account broker \
            URL then tells the account's devices where it is.
            """,
        subcommands: [Config.self]
    )
}
