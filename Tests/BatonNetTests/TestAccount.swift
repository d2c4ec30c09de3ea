import BatonClient
import BatonNet
import BatonSecurity
import Foundation
import NIOCore
import X509

/// An account made in a temporary folder, as `baton` makes one on first use: its holder's
/// configuration (with the CA key) is the XDG_CONFIG_HOME of the tests' `baton` commands and
/// the identity of their in-process clients; each agent gets a device of its own in it.
final class TestAccount: Sendable {
    /// The account every test agent and client of this process belongs to, unless a test
    /// asks for a stranger.
    static let shared: TestAccount = try! TestAccount()

    /// The holder's XDG_CONFIG_HOME.
    let home: TemporaryDirectory
    let credentials: DeviceCredentials
    let security: ConnectionSecurity

    init() throws {
        home = try TemporaryDirectory("baton-test-account")
        let folder = ConfigurationFolder(path: home.path + "/baton")
        credentials = try DeviceCredentials.loadOrCreate(in: folder, deviceName: "test holder")
        security = try .tls(credentials: credentials, in: folder)
    }

    /// The holder's configuration folder.
    var folder: ConfigurationFolder { ConfigurationFolder(path: home.path + "/baton") }

    /// The account's fingerprint in hex, as `baton account show --json` and `join --json` print it.
    var fingerprint: String { credentials.fingerprint.hex }

    /// Makes `xdg` (an XDG_CONFIG_HOME with no account yet) the home of a new device of this
    /// account named `name`, as `baton account export-device` and `import` would; the new
    /// device's id.
    @discardableResult
    func enrol(xdg: String, name: String = "test device") throws -> String {
        let bundle = try credentials.exportDevice(named: name, in: folder)
        return try DeviceCredentials.install(bundle, in: ConfigurationFolder(path: xdg + "/baton")).deviceID
    }

    /// A new device of this account named `name`, with a configuration folder of its own (in a
    /// fresh XDG_CONFIG_HOME, for `runBaton(..., xdg: device.home.path)` or an in-process client).
    func device(named name: String) throws -> TestDevice {
        let home = try TemporaryDirectory("baton-test-device")
        try enrol(xdg: home.path, name: name)
        return try TestDevice(home: home)
    }

    /// A device of this account whose certificate expired years ago: it was issued, and the
    /// device joined with it, at a time more than a device certificate's lifetime back. Such a
    /// device cannot even run `baton` (its own folder fails to load), so it is for in-process
    /// clients only: the hostile caller that presents an expired certificate anyway.
    func expiredDevice(named name: String) throws -> TestDevice {
        guard let authority = credentials.authority else { throw AgentFailure("the test account's holder has no CA key") }
        let home = try TemporaryDirectory("baton-test-expired")
        let folder = ConfigurationFolder(path: home.path + "/baton")
        // A device id and key of its own first (with an account of its own, as on first use).
        let own = try DeviceCredentials.loadOrCreate(in: folder, deviceName: name)
        let then = Date().addingTimeInterval(-11 * 365 * 86_400)
        let certificate = try authority.issueDeviceCertificate(id: own.deviceID, name: name, publicKey: own.key.publicKey, now: then)
        let joined = try DeviceCredentials.join(
            accountCertificate: credentials.accountCertificate, deviceCertificate: certificate, revocationList: nil,
            in: folder, now: then)
        return try TestDevice(home: home, credentials: joined)
    }

    /// Copies the holder's revocation list (`baton account revoke`'s) into the configuration
    /// folder of the device whose XDG_CONFIG_HOME is `xdg`, as if the device had met the holder.
    func passRevocationList(to xdg: String) throws {
        guard let list = try folder.read("revocations.json") else { throw AgentFailure("the account has revoked nothing") }
        try ConfigurationFolder(path: xdg + "/baton").write(list, to: "revocations.json", mode: 0o644)
    }
}

/// A device of a test account with a configuration folder of its own.
final class TestDevice: Sendable {
    /// Its XDG_CONFIG_HOME.
    let home: TemporaryDirectory
    let credentials: DeviceCredentials
    let security: ConnectionSecurity

    var id: String { credentials.deviceID }
    var folder: ConfigurationFolder { ConfigurationFolder(path: home.path + "/baton") }

    /// The device whose XDG_CONFIG_HOME is `home`, with the credentials its folder holds, or
    /// `credentials` as they are (an expired certificate, which ``DeviceCredentials/load(from:)``
    /// refuses to read).
    init(home: TemporaryDirectory, credentials: DeviceCredentials? = nil) throws {
        self.home = home
        let folder = ConfigurationFolder(path: home.path + "/baton")
        guard let credentials = try credentials ?? DeviceCredentials.load(from: folder) else {
            throw AgentFailure("no account in \(folder.path)")
        }
        self.credentials = credentials
        security = try .tls(credentials: credentials, in: folder)
    }
}

/// A client on the shared group with `security` (a device's), reaching agents of other accounts
/// by address when `unlistedAgents` says so (as `--authorization anonymous` does).
func makeClient(security: ConnectionSecurity, unlistedAgents: AgentExpectation = .ownAccount) -> BatonClient {
    var options = BatonClient.Options()
    options.connectTimeout = .seconds(3)
    options.security = security
    options.deviceName = "baton-net-tests"
    options.unlistedAgents = unlistedAgents
    return BatonClient(eventLoop: clientGroup.next(), options: options)
}
