import BatonCore

/// Where a device's agent listens: `host:port` (`[v6]:port` for IPv6). The same type as the
/// endpoints discovery reports, so a found device's address is used as it stands.
public typealias DeviceAddress = RemoteDevice.Endpoint
