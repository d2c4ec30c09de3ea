/// Who a device is, as its agent describes it.
public struct DeviceInfo: Sendable, Equatable {
    /// A UUID string, stable across restarts.
    public var id: String
    /// The display name.
    public var name: String
    public var kind: DeviceKind
    public var platform: Platform
    public var model: String
    public var manufacturer: String

    public init(id: String, name: String, kind: DeviceKind, platform: Platform = .current, model: String = "", manufacturer: String = "") {
        self.id = id
        self.name = name
        self.kind = kind
        self.platform = platform
        self.model = model
        self.manufacturer = manufacturer
    }
}

/// An app a device hosts, as the agent describes it.
public struct AppInfo: Sendable, Equatable {
    /// Reverse-DNS id: `org.example.player`.
    public var id: String
    public var name: String
    /// URI schemes it takes, lower case, without `:`.
    public var schemes: [String]
    /// The app services it provides.
    public var services: [String]
    public var attributes: ValueDictionary
    /// Whether callers from other accounts may reach it.
    public var anonymous: Bool

    public init(id: String, name: String, schemes: [String] = [], services: [String] = [], attributes: ValueDictionary = [:], anonymous: Bool = false) {
        self.id = id
        self.name = name
        self.schemes = schemes
        self.services = services
        self.attributes = attributes
        self.anonymous = anonymous
    }
}

/// What a device says of itself when asked (a Describe): who it is and the apps the caller may
/// see.
public struct DeviceDescription: Sendable, Equatable {
    public var device: DeviceInfo
    public var apps: [AppInfo]

    public init(device: DeviceInfo, apps: [AppInfo] = []) {
        self.device = device
        self.apps = apps
    }
}
