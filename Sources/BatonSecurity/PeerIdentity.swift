import BatonCore
import X509

/// Who is at the other end of a connection, as its certificate chain shows: what the peer may do
/// (``AuthorizationKind``), and which device of which account it proved to be, where its chain
/// says.
public struct PeerIdentity: Sendable, Equatable {
    /// `.sameAccount` for a device our account's CA issued; `.anonymous` for anyone else.
    public var authorization: AuthorizationKind
    /// The device id its certificate names as a `urn:uuid:` URI (lower case); nil when it names
    /// none. For an anonymous peer it is the peer's own claim: no account of ours vouches for it.
    public var deviceID: String?
    /// The account whose CA issued its certificate; nil for an anonymous peer whose chain names
    /// no CA that signed it.
    public var account: AccountFingerprint?
    /// The key of its certificate, which the TLS handshake proved it holds: what an account's
    /// device enrols a joining device with.
    public var publicKey: Certificate.PublicKey?

    /// A peer with the given fields.
    public init(authorization: AuthorizationKind, deviceID: String?, account: AccountFingerprint?, publicKey: Certificate.PublicKey? = nil) {
        self.authorization = authorization
        self.deviceID = deviceID
        self.account = account
        self.publicKey = publicKey
    }
}
