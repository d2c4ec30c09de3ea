/// A service instance found by ``MDNSBrowser``: everything needed to connect to it and tell
/// what it is.
public struct MDNSService: Sendable, Hashable, CustomStringConvertible {
    /// The instance name people see, such as `Living Room TV (2)`: the first label of
    /// ``fullName``. Unique among the browsed type's instances on the link.
    public var instanceName: String
    /// The instance's full DNS name, such as `Living Room TV (2)._baton._tcp.local.`.
    public var fullName: DNSName
    /// The host the SRV record points at.
    public var hostName: DNSName
    /// The TCP port from the SRV record.
    public var port: UInt16
    /// The host's addresses, IPv4 first, each with the interface it was learned on; never empty.
    public var addresses: [MDNSServiceAddress]
    /// The TXT record's entries (RFC 6763 §6).
    public var txt: [DNSTXTEntry]
    /// The indices of the interfaces the instance was seen on, ascending.
    public var interfaceIndices: [Int]

    /// A service with the given fields.
    public init(
        instanceName: String, fullName: DNSName, hostName: DNSName, port: UInt16, addresses: [MDNSServiceAddress],
        txt: [DNSTXTEntry], interfaceIndices: [Int]
    ) {
        self.instanceName = instanceName
        self.fullName = fullName
        self.hostName = hostName
        self.port = port
        self.addresses = addresses
        self.txt = txt
        self.interfaceIndices = interfaceIndices
    }

    /// The value of the TXT entry `key` (compared ignoring case) as text; nil if absent or a
    /// boolean.
    public func txtValue(_ key: String) -> String? {
        txt.first { DNSTXTEntry.foldedKey($0.key) == DNSTXTEntry.foldedKey(key) }?.text
    }

    /// `name at host:port [addresses] {txt}`.
    public var description: String {
        "\(instanceName) at \(hostName):\(port) \(addresses) \(txt)"
    }
}
