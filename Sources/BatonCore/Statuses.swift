// Rome's statuses, as scripts and JSON output spell them (lowercase, snake case).

/// The outcome of a remote launch.
public enum LaunchStatus: String, Sendable, CaseIterable, Codable {
    case success
    /// The named app is not on the device.
    case appUnavailable = "app_unavailable"
    /// Nothing on the device takes the URI's scheme (or the named app does not).
    case protocolUnavailable = "protocol_unavailable"
    /// The device could not be reached, or went away before answering.
    case remoteSystemUnavailable = "remote_system_unavailable"
    /// The launch data is over the size limit.
    case valueSetTooLarge = "value_set_too_large"
    /// This side refused to send it.
    case deniedByLocalSystem = "denied_by_local_system"
    /// The device refused the caller.
    case deniedByRemoteSystem = "denied_by_remote_system"
    /// Anything else; the agent's log says why.
    case unknown
}

/// The outcome of opening an app-service channel.
public enum OpenStatus: String, Sendable, CaseIterable, Codable {
    case success
    case appNotInstalled = "app_not_installed"
    case appUnavailable = "app_unavailable"
    case appServiceUnavailable = "app_service_unavailable"
    case remoteSystemUnavailable = "remote_system_unavailable"
    case remoteSystemNotSupportedByApp = "remote_system_not_supported_by_app"
    case notAuthorized = "not_authorized"
    case unknown
}

/// The status of a response on an app-service channel.
public enum ResponseStatus: String, Sendable, CaseIterable, Codable {
    case success
    /// The provider failed or refused the request.
    case failure
    case resourceLimitsExceeded = "resource_limits_exceeded"
    case remoteSystemUnavailable = "remote_system_unavailable"
    case messageSizeTooLarge = "message_size_too_large"
    case appServiceConnectionClosed = "app_service_connection_closed"
    case unknown
}

/// Why an app-service channel closed.
public enum ClosedStatus: String, Sendable, CaseIterable, Codable {
    /// One side closed it.
    case completed
    /// The agent shut down.
    case canceled
    case resourceLimitsExceeded = "resource_limits_exceeded"
    /// The connection was lost.
    case unknown
}

/// A device's form factor.
public enum DeviceKind: String, Sendable, CaseIterable, Codable {
    case desktop, laptop, phone, tablet, tv, xbox, speaker, hub, iot, holographic, unknown
}

/// A device's operating system.
public enum Platform: String, Sendable, CaseIterable, Codable {
    case linux, windows, macos, android, ios, unknown

    /// The platform this process runs on.
    public static var current: Platform {
        #if os(Linux)
        .linux
        #elseif os(macOS)
        .macos
        #elseif os(Windows)
        .windows
        #elseif os(iOS)
        .ios
        #else
        .unknown
        #endif
    }
}
