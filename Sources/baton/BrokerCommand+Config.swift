import ArgumentParser
import BatonCore
import BatonSecurity
import Crypto
import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension BrokerCommand {
    /// `baton broker config --host NAME --dir DIR [--port N] [--force]`.
    struct Config: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "config",
            abstract: "Write a mosquitto configuration that serves this account's devices.",
            discussion: """
                Run on the device that made the account (it holds the account's key, which \
                signs the broker's certificate); on any other, it is refused (exit 77). Writes \
                into DIR:

                  mosquitto.conf   a TLS listener on --port (8883): clients must show a \
                certificate of this account (require_certificate); the certificate's \
                CommonName, the device's id, is its username (use_identity_as_username)
                  ca.pem           the account's CA certificate
                  server.pem, server-key.pem   a server certificate for --host (a DNS name, or \
                an IP address), issued by the account's CA
                  acl              each device reads and writes its own topics \
                (baton/v1/ACCOUNT/DEVICE/#), reads every device's presence, and writes to \
                other devices' inboxes only

                mosquitto started as root reads the key and the ACL after it becomes its own \
                user (mosquitto): run as root, the files are that user's, readable by it \
                alone (0600; 0640 for the certificates and mosquitto.conf); otherwise they are \
                yours, 0600. An existing DIR/mosquitto.conf is replaced only with --force.

                Devices whose certificate was issued before Baton named devices by id in it \
                (their CommonName is the device's name) are refused by this ACL: enrol them \
                again (baton account invite and join, or export-device and import).

                Example, a household's broker on the first device:
                  sudo baton broker config --host hub.home --dir /etc/mosquitto/baton
                  sudo mosquitto -c /etc/mosquitto/baton/mosquitto.conf
                  baton account broker mqtts://hub.home:8883
                """
        )

        @Option(help: ArgumentHelp("The name devices reach the broker by: a DNS name or an IP address; its certificate is for it.", valueName: "name"))
        var host: String

        @Option(help: ArgumentHelp("The folder to write into; made if missing.", valueName: "dir"))
        var dir: String

        @Option(help: ArgumentHelp("The TLS listener's port.", valueName: "n"))
        var port: Int = 8883

        @Flag(help: "Replace an existing DIR/mosquitto.conf (and the files beside it).")
        var force = false

        @OptionGroup var logging: LoggingOptions

        func validate() throws {
            guard (1...65535).contains(port) else { throw ValidationError("Invalid --port \(port): use 1 to 65535.") }
            do { _ = try brokerSettings() } catch {
                throw ValidationError("Invalid --host '\(host)': use a DNS name or an IP address, like hub.home or 192.168.1.10.")
            }
        }

        /// The URL devices use for the broker: `mqtts://HOST:PORT`.
        private func brokerSettings() throws -> BrokerSettings {
            let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            return try BrokerSettings(url: "mqtts://\(bracketed):\(port)")
        }

        func run() throws {
            logging.bootstrap()
            let credentials = AccountCommand.credentials(.standard, logging)
            guard let authority = credentials.authority else {
                FailureReport.write(
                    message: "denied: this device does not hold the account's key, which signs the broker's certificate; "
                        + "run baton broker config on the device that made the account (the first device)",
                    format: logging.logFormat, errorClass: .denied)
                Baton.exitProcess(ErrorClass.denied.exitCode)
            }
            let settings = try brokerSettings()
            let folder = ConfigurationFolder(path: absolute(dir))
            let owner = MosquittoOwner.current()
            AccountCommand.attempt(logging) {
                let existed = FileManager.default.fileExists(atPath: folder.path)
                try FileManager.default.createDirectory(atPath: folder.path, withIntermediateDirectories: true)
                guard force || !FileManager.default.fileExists(atPath: folder.file("mosquitto.conf")) else {
                    throw SecurityError.refused("\(folder.file("mosquitto.conf")) exists; give --force to replace it")
                }
                if !existed { try owner.own(folder.path, mode: owner.isMosquitto ? 0o750 : 0o700) }
                let key = Certificate.PrivateKey(P256.Signing.PrivateKey())
                let certificate = try authority.issueServerCertificate(host: settings.host, publicKey: key.publicKey)
                let topics = BrokerTopics(account: credentials.fingerprint.hex)
                let files: [(name: String, text: String, secret: Bool)] = [
                    ("ca.pem", try credentials.accountCertificate.serializeAsPEM().pemString + "\n", false),
                    ("server.pem", try certificate.serializeAsPEM().pemString + "\n", false),
                    ("server-key.pem", try key.serializeAsPEM().pemString + "\n", true),
                    ("acl", Self.acl(topics, account: credentials.fingerprint), true),
                    ("mosquitto.conf", Self.conf(folder, port: port, account: credentials.fingerprint), false),
                ]
                for file in files {
                    try folder.write(file.text, to: file.name, mode: owner.mode(secret: file.secret))
                    try owner.own(folder.file(file.name), mode: owner.mode(secret: file.secret))
                }
            }
            let who = owner.isMosquitto ? "the mosquitto user's, readable by it alone" : "yours, readable by you alone (0600)"
            print("""
                wrote \(folder.path): mosquitto.conf, acl, ca.pem, server.pem, server-key.pem (\(who))
                a server certificate for \(settings.host), issued by account \(credentials.fingerprint.short)
                start the broker:      mosquitto -c \(folder.file("mosquitto.conf"))
                then, on this device:  baton account broker \(settings.url)
                device files from baton account export-device carry it; on devices enrolled before, run the same baton account broker there.
                devices enrolled before this Baton (their certificate's CommonName is their name, not their id) are refused by the ACL: enrol them again.
                """)
            if !credentials.certificate.subject.description.contains("CN=\(credentials.deviceID)") {
                StandardError.write("baton: this device's own certificate names it by its name, not its id (\(credentials.certificate.subject)): the broker's ACL refuses it until it is enrolled again\n")
            }
            if let warning = owner.unreachableParent(of: folder.path) {
                StandardError.write("baton: \(warning)\n")
            }
        }

        /// `path` made absolute against the working directory.
        private func absolute(_ path: String) -> String {
            let joined = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            return URL(fileURLWithPath: joined).standardizedFileURL.path
        }

        /// The ACL: every client's username is its device id (its certificate's CommonName).
        /// `pattern` lines apply to every client (`topic` lines before any `user` line would
        /// apply to anonymous clients only, which this broker has none of); mosquitto warns of
        /// the two without `%u` when it loads them, harmlessly.
        static func acl(_ topics: BrokerTopics, account: AccountFingerprint) -> String {
            """
            # Written by baton broker config for Baton account \(account.short) (\(account.hex)).
            # A client's username is its certificate's CommonName: its device id.
            # Its own topics: presence, and its inboxes.
            pattern readwrite \(topics.root)%u/#
            # Every device's presence, to see the others.
            pattern read \(topics.allPresence)
            # Other devices' inboxes, to ask them things; never to read them.
            pattern write \(topics.root)+/in/#

            """
        }

        /// The mosquitto configuration: one TLS listener, client certificates of the account.
        static func conf(_ folder: ConfigurationFolder, port: Int, account: AccountFingerprint) -> String {
            """
            # Written by baton broker config for Baton account \(account.short) (\(account.hex)).
            # Start with: mosquitto -c \(folder.file("mosquitto.conf"))
            per_listener_settings false
            allow_anonymous false
            acl_file \(folder.file("acl"))
            # Nagle's algorithm with delayed ACKs makes each QoS 1 round trip wait ~40 ms.
            set_tcp_nodelay true

            listener \(port)
            cafile \(folder.file("ca.pem"))
            certfile \(folder.file("server.pem"))
            keyfile \(folder.file("server-key.pem"))
            require_certificate true
            use_identity_as_username true

            """
        }
    }
}
