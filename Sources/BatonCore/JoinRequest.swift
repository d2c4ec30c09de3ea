/// A device asking to join an account with an invite code (Protocol/baton.proto's JoinRequest).
public struct JoinRequest: Sendable, Equatable {
    /// The code's secret part.
    public var inviteSecret: [UInt8]
    /// The joining device's id and display name.
    public var deviceID: String
    public var deviceName: String
    /// The joining device's public key, as the wire carries it.
    public var publicKey: [UInt8]

    public init(inviteSecret: [UInt8], deviceID: String, deviceName: String, publicKey: [UInt8]) {
        self.inviteSecret = inviteSecret
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.publicKey = publicKey
    }
}

/// How a join went.
public enum JoinStatus: String, Sendable, CaseIterable {
    case success
    /// The code is unknown, used or expired, or the device would be refused.
    case refused
    /// The agent's device does not hold the account's key.
    case notSupported = "not_supported"
    case unknown
}

/// An agent's answer to a ``JoinRequest``: on `success`, what makes the device a member.
public struct JoinAnswer: Sendable, Equatable {
    public var status: JoinStatus
    /// For people: why, when not `success`.
    public var detail: String
    /// The account's CA certificate and the new device certificate, DER.
    public var accountCertificate: [UInt8]
    public var deviceCertificate: [UInt8]
    /// The account's signed revocation list; empty when it has none.
    public var revocationList: String
    /// The account's broker as the wire carries it: its URL, empty when the account has none,
    /// and the PEM of its own CA, empty for the account's CA. Unchecked: the joining side
    /// decides whether it can use them.
    public var brokerURL: String
    public var brokerCA: String

    public init(
        status: JoinStatus, detail: String = "", accountCertificate: [UInt8] = [], deviceCertificate: [UInt8] = [],
        revocationList: String = "", brokerURL: String = "", brokerCA: String = ""
    ) {
        self.status = status
        self.detail = detail
        self.accountCertificate = accountCertificate
        self.deviceCertificate = deviceCertificate
        self.revocationList = revocationList
        self.brokerURL = brokerURL
        self.brokerCA = brokerCA
    }
}
