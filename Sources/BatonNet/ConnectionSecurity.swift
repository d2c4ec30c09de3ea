import BatonCore
import BatonSecurity
import NIOCore
import NIOSSL
import X509

/// How connections are protected: mutual TLS 1.3 with this device's certificate, or plaintext
/// between loopback addresses for benchmarks and debugging.
public enum ConnectionSecurity: Sendable {
    /// Plaintext, allowed between loopback addresses only. An agent takes every caller for
    /// `same_account`: only processes on this machine can reach it.
    case insecure
    /// Mutual TLS 1.3: both ends present [device certificate, account CA certificate] and check
    /// the other's with ``TLSIdentity/trustStore``.
    case tls(TLSIdentity)

    /// Mutual TLS as `credentials`' device, trusting what `folder` holds (the account and its
    /// revocation list).
    public static func tls(credentials: DeviceCredentials, in folder: ConfigurationFolder) throws -> ConnectionSecurity {
        .tls(try TLSIdentity(trustStore: try TrustStore(folder: folder, credentials: credentials)))
    }

    /// The trust store, when connections use TLS.
    public var trustStore: TrustStore? {
        if case .tls(let identity) = self { return identity.trustStore }
        return nil
    }

    /// Whether `host` names a loopback address, the only kind `insecure` binds and dials:
    /// 127.0.0.0/8, ::1 and `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        guard let address = try? SocketAddress(ipAddress: host, port: 0) else { return host == "localhost" }
        switch address {
        case .v4: return address.ipAddress?.hasPrefix("127.") ?? false
        case .v6: return address.ipAddress == "::1"
        default: return false
        }
    }
}

/// This device's TLS side: its certificate chain and key as TLS contexts for both roles, and
/// the trust store that judges peers. Made once per process: building a context parses keys.
public final class TLSIdentity: Sendable {
    /// The account, this device's credentials and the revocation list in force.
    public let trustStore: TrustStore
    let serverContext: NIOSSLContext
    let clientContext: NIOSSLContext

    /// Contexts presenting `trustStore`'s device certificate and account CA; TLS 1.3 only,
    /// and a certificate required of the peer. Peers are judged by ``TrustStore/trust``, not by
    /// BoringSSL's chain building (a caller of another account is served, as `anonymous`).
    public init(trustStore: TrustStore) throws {
        let (chain, key) = try Self.presented(by: trustStore.credentials)
        func restrict(_ configuration: inout TLSConfiguration) {
            configuration.minimumTLSVersion = .tlsv13
            configuration.certificateVerification = .noHostnameVerification
            // Our own CA: keeps BoringSSL from loading the system's roots, which Baton never uses.
            configuration.trustRoots = .certificates([chain[1]])
        }
        var server = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        restrict(&server)
        var client = TLSConfiguration.makeClientConfiguration()
        client.certificateChain = chain.map { .certificate($0) }
        client.privateKey = .privateKey(key)
        restrict(&client)
        self.trustStore = trustStore
        self.serverContext = try NIOSSLContext(configuration: server)
        self.clientContext = try NIOSSLContext(configuration: client)
    }

    /// What `credentials`' device presents in a TLS handshake: its certificate and the
    /// account's CA (leaf first), and its key. Also for TLS to a broker.
    public static func presented(by credentials: DeviceCredentials) throws -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let chain = try [credentials.certificate, credentials.accountCertificate].map {
            try NIOSSLCertificate(bytes: Array(try $0.serializeAsPEM().pemString.utf8), format: .pem)
        }
        return (chain, try NIOSSLPrivateKey(bytes: Array(try credentials.key.serializeAsPEM().pemString.utf8), format: .pem))
    }
}

/// What a client requires of the agent it dials: the device id discovery advertised (nil: any
/// device) and its account.
public struct PeerExpectation: Sendable, Equatable {
    public var deviceID: String?
    public var account: AgentExpectation

    /// `deviceID` (nil for any device) of `account` (this device's own by default).
    public init(deviceID: String? = nil, account: AgentExpectation = .ownAccount) {
        self.deviceID = deviceID
        self.account = account
    }
}
