import ArgumentParser
import BatonCore
import BatonSecurity

extension AccountCommand {
    /// `baton account known`: the devices this device has met, as their handshakes proved them.
    struct Known: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "known",
            abstract: "List the devices this device has met, pinned to what their handshakes proved.",
            discussion: """
                Baton pins devices as OpenSSH pins host keys (known-devices.json in the \
                configuration folder): a device id that proved once to be of this account is \
                reached only by a peer that proves this account again, whatever discovery says; a \
                device of another account must come back with the same account and key. A name \
                of this account's devices resolves to the name it gave over TLS. With --json, one \
                object: {"devices": [{"id", "account", "own", "key", "name"}]}.
                """
        )

        @Flag(help: "Print one JSON object instead of text.")
        var json = false

        @OptionGroup var logging: LoggingOptions

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let known = KnownDevices(folder: folder, own: credentials.fingerprint)
            let pins = known.all.sorted { $0.key < $1.key }
            if json {
                let devices = pins.map { id, pin in
                    JSON.object([
                        .init("id", .string(id)), .init("account", .string(pin.account.hex)),
                        .init("own", .bool(known.isOwn(id))), .init("key", .string(pin.key)), .init("name", .string(pin.name)),
                    ])
                }
                print(JSON.object([.init("devices", .array(devices))]).serialized())
                return
            }
            guard !pins.isEmpty else {
                print("no devices met yet")
                return
            }
            for (id, pin) in pins {
                let whose = known.isOwn(id) ? "this account" : "account \(pin.account.short)…"
                print("\(id)  \(pin.name.isEmpty ? "-" : pin.name)  (\(whose))")
            }
        }
    }

    /// `baton account forget ID`.
    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Forget what a device proved, so that the next handshake pins it afresh.",
            discussion: """
                For a device that was set up again (a new key) or really moved to another \
                account: Baton refuses such a change until told to forget the device. Exits 0 \
                when it was known, 68 when it was not.
                """
        )

        @Argument(help: ArgumentHelp("The device's id (see baton account known).", valueName: "id"))
        var id: String

        @OptionGroup var logging: LoggingOptions

        func run() throws {
            logging.bootstrap()
            let folder = ConfigurationFolder.standard
            let credentials = AccountCommand.credentials(folder, logging)
            let known = KnownDevices(folder: folder, own: credentials.fingerprint)
            guard AccountCommand.attempt(logging, { try known.forget(id) }) else {
                StandardError.write("not_found: no device with the id \(id) is known (see baton account known)\n")
                throw ExitCode(ErrorClass.notFound.exitCode)
            }
            print("forgot \(id.lowercased()); the next handshake with it pins it afresh")
        }
    }
}
