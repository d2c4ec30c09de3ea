import BatonNet
import BatonSecurity

extension ConnectionSecurity {
    /// Mutual TLS with this device's account (made on first use in $XDG_CONFIG_HOME/baton), or
    /// plaintext with `--insecure`. Throws with a message for the person when the account
    /// cannot be read or made.
    static func forCommandLine(insecure: Bool) throws -> ConnectionSecurity {
        if insecure { return .insecure }
        let folder = ConfigurationFolder.standard
        let credentials = try DeviceCredentials.loadOrCreate(in: folder, deviceName: AgentCommand.hostName())
        return try .tls(credentials: credentials, in: folder)
    }

    /// The help every command that connects shares.
    static let insecureHelp = """
        Plaintext instead of mutual TLS, for benchmarks and debugging: dials loopback agents \
        only, and only agents started with --insecure answer.
        """
}
