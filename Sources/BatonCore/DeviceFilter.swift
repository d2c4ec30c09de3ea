/// Which devices a watcher or a device list shows, as in Rome: filters of different types
/// must all match (AND); the values within one filter are alternatives (OR). An empty filter
/// shows available devices of this account on every transport.
public struct DeviceFilter: Sendable, Equatable {
    /// Device kinds to show; empty shows every kind.
    public var kinds: Set<DeviceKind>
    /// Transports to show; nil shows every transport (`any`).
    public var transport: Transport?
    /// Statuses to show; nil shows every status (`any`). Default: available only.
    public var status: DeviceStatus?
    /// Platforms to show; empty shows every platform.
    public var platforms: Set<Platform>
    /// `same_account` (default) shows this account's devices; `anonymous` shows any account's.
    public var authorization: AuthorizationKind

    public init(
        kinds: Set<DeviceKind> = [], transport: Transport? = nil, status: DeviceStatus? = .available,
        platforms: Set<Platform> = [], authorization: AuthorizationKind = .sameAccount
    ) {
        self.kinds = kinds
        self.transport = transport
        self.status = status
        self.platforms = platforms
        self.authorization = authorization
    }

    /// Whether `device` passes, for a caller of account `account`.
    public func matches(_ device: RemoteDevice, account: String) -> Bool {
        if !kinds.isEmpty, !kinds.contains(device.info.kind) { return false }
        if let transport, device.transport != transport { return false }
        if let status, device.status != status { return false }
        if !platforms.isEmpty, !platforms.contains(device.info.platform) { return false }
        if authorization == .sameAccount, device.account != account { return false }
        return true
    }
}
