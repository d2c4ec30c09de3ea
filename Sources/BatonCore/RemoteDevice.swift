/// A device as discovery knows it: who it is, how to reach it, and how it was found.
public struct RemoteDevice: Sendable, Equatable {
    /// Who the device says it is (mDNS TXT, or its Describe answer for a static peer).
    public var info: DeviceInfo
    /// How its agent is reached, best first: every route its sources know.
    public var routes: [DeviceRoute]
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
    /// TCP endpoints it says it listens on (in its broker presence) but that are not routes:
    /// a client that reached it through a relay tries them in the background, over mutual TLS
    /// expecting the same device, and moves to the first that answers. Not tried before the
    /// relay, so that the address of another network costs no call a connect timeout.
    public var directCandidates: [Endpoint] = []

    public init(
        info: DeviceInfo, routes: [DeviceRoute], transport: Transport = .local, status: DeviceStatus = .available,
        account: String = "", protocolVersion: Int = 1, sources: Set<DiscoverySource> = []
    ) {
        self.info = info
        self.routes = routes
        self.transport = transport
        self.status = status
        self.account = account
        self.protocolVersion = protocolVersion
        self.sources = sources
    }

    /// A device whose agent listens at `endpoints` (TCP), best first.
    public init(
        info: DeviceInfo, endpoints: [Endpoint], transport: Transport = .local, status: DeviceStatus = .available,
        account: String = "", protocolVersion: Int = 1, sources: Set<DiscoverySource> = []
    ) {
        self.init(
            info: info, routes: endpoints.map(DeviceRoute.tcp), transport: transport, status: status, account: account,
            protocolVersion: protocolVersion, sources: sources)
    }

    /// The TCP endpoints among its routes, best first.
    public var endpoints: [Endpoint] { routes.compactMap(\.endpoint) }

    /// A host and port an agent listens on.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Parses `host:port` (`[v6]:port`); nil if it is not one, or the port is not
        /// 1...65535 (0...65535 when `allowingPortZero`, for an address to listen on).
        public init?(_ text: String, allowingPortZero: Bool = false) {
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
                  (allowingPortZero ? 0 : 1)...65535 ~= port else { return nil }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty, !host.contains(" ") else { return nil }
            self.init(host: host, port: port)
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

/// One way to reach a device's agent. Sources of devices know routes; a client tries them in
/// order, expecting the device's identity at each.
public enum DeviceRoute: Sendable, Hashable, CustomStringConvertible {
    /// The agent's TCP listener (from an mDNS SRV record and its addresses, or a static peer).
    case tcp(RemoteDevice.Endpoint)
    /// The agent's inbox on the account's MQTT 5 broker (from the device's presence there).
    case broker(BrokerRoute)

    /// The TCP endpoint, for a TCP route.
    public var endpoint: RemoteDevice.Endpoint? {
        switch self {
        case .tcp(let endpoint): endpoint
        case .broker: nil
        }
    }

    /// `host:port` for TCP, `broker:DEVICE-ID` through the broker.
    public var description: String {
        switch self {
        case .tcp(let endpoint): endpoint.description
        case .broker(let route): route.description
        }
    }
}

/// A device reached through the account's broker: its topics are named by the account's
/// fingerprint and the device's id alone (never by a name a person gave), so the route is
/// those two. Which broker is the process's setting (`--broker`, the account's), not the
/// route's.
public struct BrokerRoute: Sendable, Hashable, CustomStringConvertible {
    /// The account's fingerprint, 64 lower-case hex digits.
    public var account: String
    /// The device's id, lower case.
    public var deviceID: String

    public init(account: String, deviceID: String) {
        self.account = account.lowercased()
        self.deviceID = deviceID.lowercased()
    }

    /// `broker:DEVICE-ID`.
    public var description: String { "broker:" + deviceID }
}

/// Where the directory learnt of a device: a kind of device source. Open, so that a new kind
/// of source (a broker's presence) needs no change here.
public struct DiscoverySource: RawRepresentable, Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// mDNS/DNS-SD on the LAN.
    public static let mdns = DiscoverySource(rawValue: "mdns")
    /// A `host:port` given on the command line or in options.
    public static let peer = DiscoverySource(rawValue: "peer")
    /// Signed presence on the account's MQTT 5 broker.
    public static let broker = DiscoverySource(rawValue: "broker")

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { rawValue }
}

/// Whose devices a caller may see (Rome's `RemoteSystemAuthorizationKind`).
public enum AuthorizationKind: String, Sendable, CaseIterable, Codable {
    /// Devices of this device's account only (the default).
    case sameAccount = "same_account"
    /// Devices of any account as well; they serve only their anonymous apps.
    case anonymous
}
