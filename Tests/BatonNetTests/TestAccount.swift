import BatonNet
import BatonSecurity
import Foundation

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
        security = .tls(try TLSIdentity(trustStore: try TrustStore(folder: folder, credentials: credentials)))
    }

    /// The holder's configuration folder.
    var folder: ConfigurationFolder { ConfigurationFolder(path: home.path + "/baton") }

    /// Makes `xdg` (an XDG_CONFIG_HOME with no account yet) the home of a new device of this
    /// account named `name`, as `baton account export-device` and `import` would.
    func enrol(xdg: String, name: String = "test device") throws {
        let bundle = try credentials.exportDevice(named: name, in: folder)
        _ = try DeviceCredentials.install(bundle, in: ConfigurationFolder(path: xdg + "/baton"))
    }
}
