import BatonCore

extension Baton_V1_Device {
    /// `device` as the wire describes it; kind and platform by their lower-case names.
    public init(_ device: DeviceInfo) {
        self.init()
        id = device.id
        name = device.name
        kind = device.kind.rawValue
        platform = device.platform.rawValue
        model = device.model
        manufacturer = device.manufacturer
    }
}

extension DeviceInfo {
    /// The device `wire` describes; a kind or platform this side does not know is `.unknown`.
    public init(wire: Baton_V1_Device) {
        self.init(
            id: wire.id,
            name: wire.name,
            kind: DeviceKind(rawValue: wire.kind) ?? DeviceKind(rawValue: wire.kind.lowercased()) ?? .unknown,
            platform: Platform(rawValue: wire.platform) ?? Platform(rawValue: wire.platform.lowercased()) ?? .unknown,
            model: wire.model,
            manufacturer: wire.manufacturer)
    }
}

extension Baton_V1_App {
    /// `app` as the wire describes it.
    public init(_ app: AppInfo) {
        self.init()
        id = app.id
        name = app.name
        schemes = app.schemes
        services = app.services
        if !app.attributes.isEmpty { attributes = Baton_V1_Dictionary(app.attributes) }
        anonymous = app.anonymous
    }
}

extension AppInfo {
    /// The app `wire` describes.
    ///
    /// - Throws: ``ValueError`` if its attributes break the Value rules; `path` names them.
    public init(wire: Baton_V1_App, path: String = "attributes") throws(ValueError) {
        self.init(
            id: wire.id,
            name: wire.name,
            schemes: wire.schemes,
            services: wire.services,
            attributes: wire.hasAttributes ? try ValueDictionary(wire: wire.attributes, path: path) : [:],
            anonymous: wire.anonymous)
    }
}
