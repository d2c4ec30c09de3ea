import BatonCore
import BatonNet
import BatonSecurity

/// How to reach one device: who it must prove to be, and the routes to try, best first. Made
/// from a device discovery found (its id, its account and every route its sources know), or
/// from a bare `host:port`.
public struct DeviceTarget: Sendable, Equatable, CustomStringConvertible {
    /// The device id the agent must prove (its certificate's `urn:uuid:`); nil for any device.
    public var deviceID: String?
    /// The routes to try, in order.
    public var routes: [DeviceRoute]
    /// The account the agent must prove; nil for the client's default
    /// (``BatonClient/Options/unlistedAgents``).
    public var account: AgentExpectation?
    /// Endpoints to try in the background once the device answered through a relay (see
    /// ``RemoteDevice/directCandidates``): a direct link must prove the same device and account.
    public var directCandidates: [RemoteDevice.Endpoint]

    public init(
        deviceID: String?, routes: [DeviceRoute], account: AgentExpectation? = nil, directCandidates: [RemoteDevice.Endpoint] = []
    ) {
        self.deviceID = deviceID
        self.routes = routes
        self.account = account
        self.directCandidates = directCandidates
    }

    /// The agent at `address`, whoever it is.
    public init(_ address: DeviceAddress) {
        self.init(deviceID: nil, routes: [.tcp(address)])
    }

    /// `device`, by its id and routes. `ownAccount` is this device's account fingerprint (hex):
    /// a device that advertises another account must prove exactly that one.
    public init(_ device: RemoteDevice, ownAccount: String) {
        let account: AgentExpectation
        if !device.account.isEmpty, device.account != ownAccount, let fingerprint = AccountFingerprint(hex: device.account) {
            account = .account(fingerprint)
        } else {
            account = .ownAccount
        }
        self.init(deviceID: device.info.id, routes: device.routes, account: account, directCandidates: device.directCandidates)
    }

    /// What the agent must prove, given the client's default for agents it knows nothing of.
    func expectation(unlisted: AgentExpectation) -> PeerExpectation {
        PeerExpectation(deviceID: deviceID, account: account ?? unlisted)
    }

    /// The first route, for messages: `192.168.1.20:47300`.
    public var description: String {
        routes.first?.description ?? deviceID ?? "nowhere"
    }

    /// What connections to the device are kept under: its id, or its first route.
    var connectionKey: String {
        if let deviceID { return "id " + deviceID.lowercased() }
        return "route " + description
    }
}
