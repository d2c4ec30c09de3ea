import X509

/// What a device proves itself with in a sealed handshake: its id, its key, and its chain (DER,
/// leaf first: the device certificate, then the account CA's certificate).
public struct SealCredentials: Sendable {
    /// The device id, lower case.
    public let deviceID: String
    /// The key whose public half the leaf certificate holds; it signs the handshake.
    public let key: Certificate.PrivateKey
    /// The chain sent in the handshake, leaf first.
    public let chain: [[UInt8]]

    /// The credentials of this device: its certificate and its account's.
    public init(_ credentials: DeviceCredentials) throws {
        try self.init(deviceID: credentials.deviceID, key: credentials.key,
                      chain: [credentials.certificate.serializeAsPEM().derBytes, credentials.accountCertificate.serializeAsPEM().derBytes])
    }

    /// Credentials from their parts (a device of no account, a test's stranger). Throws
    /// ``SealError/malformed(_:)`` when the chain is empty or does not fit in a hello, or the
    /// id is longer than one may be.
    public init(deviceID: String, key: Certificate.PrivateKey, chain: [[UInt8]]) throws {
        guard !chain.isEmpty, chain.count <= SealHandshake.maximumChainLength,
              chain.allSatisfy({ !$0.isEmpty && $0.count <= SealHandshake.maximumCertificateSize }) else {
            throw SealError.malformed("a chain of 1 to \(SealHandshake.maximumChainLength) certificates of at most \(SealHandshake.maximumCertificateSize) bytes each")
        }
        guard SealHandshake.isValidDeviceID(deviceID) else { throw SealError.malformed("a device id of 1 to \(SealHandshake.maximumIDLength) bytes") }
        self.deviceID = deviceID.lowercased()
        self.key = key
        self.chain = chain
    }
}
