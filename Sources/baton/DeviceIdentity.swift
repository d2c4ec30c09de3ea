import BatonSecurity

/// This device's id: a UUID kept in the configuration folder, made on first use.
enum DeviceIdentity {
    static func load() throws -> String {
        try ConfigurationFolder.standard.deviceID()
    }
}
