import BatonCore

/// Where a device's agent listens: `host:port` (`[v6]:port` for IPv6). The same type as the
/// endpoints discovery reports, so a found device's address is used as it stands.
public typealias DeviceAddress = RemoteDevice.Endpoint

extension RemoteDevice.Endpoint {
    /// Parses `host:port` (`[v6]:port`); nil if it is not one, or the port is not 1...65535.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(" ") else { return nil }
        self.init(host: host, port: port)
    }
}
