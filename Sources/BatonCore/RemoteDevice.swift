/// A device as discovery knows it: who it is, where it answers, and how it was found.
public struct RemoteDevice: Sendable, Equatable {
    /// Who the device says it is (mDNS TXT, or its Describe answer for a static peer).
    public var info: DeviceInfo
    /// Where its agent listens, best first (`host:port`; IPv6 hosts without brackets).
    public var endpoints: [Endpoint]
    /// How it is reached: `local` for mDNS and static peers, `cloud` through a broker.
    public var transport: Transport
    /// Whether its agent answered the last liveness check.
    public var status: DeviceStatus
    /// The fingerprint of the account its certificate chains to (empty before enrolment).
    public var account: String
    /// The protocol version it advertises.
    public var protocolVersion: Int
    /// Where it was found: `mdns`, `peer`.
    public var sources: Set<DiscoverySource>

    public init(
        info: DeviceInfo, endpoints: [Endpoint], transport: Transport = .local, status: DeviceStatus = .available,
        account: String = "", protocolVersion: Int = 1, sources: Set<DiscoverySource> = []
    ) {
        self.info = info
        self.endpoints = endpoints
        self.transport = transport
        self.status = status
        self.account = account
        self.protocolVersion = protocolVersion
        self.sources = sources
    }

    /// A host and port an agent listens on.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, with brackets around an IPv6 host.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }
}

/// How a device is reached (Rome's `RemoteSystemDiscoveryType`, narrowed to what Baton has).
public enum Transport: String, Sendable, CaseIterable, Codable {
    /// The same network: mDNS or a static peer.
    case local
    /// Through a broker.
    case cloud
}

/// Whether a known device answers.
public enum DeviceStatus: String, Sendable, CaseIterable, Codable {
    case available
    /// Still advertised, but its agent did not answer the last liveness check.
    case unavailable
}

/// Where the directory learnt of a device.
public enum DiscoverySource: String, Sendable, CaseIterable, Codable, Comparable {
    case mdns
    case peer

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// Whose devices a caller may see (Rome's `RemoteSystemAuthorizationKind`).
public enum AuthorizationKind: String, Sendable, CaseIterable, Codable {
    /// Devices of this device's account only (the default).
    case sameAccount = "same_account"
    /// Devices of any account as well; they serve only their anonymous apps.
    case anonymous
}
