import BatonCore

// BatonCore's statuses ⇄ the proto enums. A value this side does not know (a newer peer's)
// reads as `.unknown`.

extension Baton_V1_LaunchStatus {
    public init(_ status: LaunchStatus) {
        switch status {
        case .success: self = .success
        case .appUnavailable: self = .appUnavailable
        case .protocolUnavailable: self = .protocolUnavailable
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .valueSetTooLarge: self = .valueSetTooLarge
        case .deniedByLocalSystem: self = .deniedByLocalSystem
        case .deniedByRemoteSystem: self = .deniedByRemoteSystem
        case .unknown: self = .unknown
        }
    }
}

extension LaunchStatus {
    public init(wire: Baton_V1_LaunchStatus) {
        switch wire {
        case .success: self = .success
        case .appUnavailable: self = .appUnavailable
        case .protocolUnavailable: self = .protocolUnavailable
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .valueSetTooLarge: self = .valueSetTooLarge
        case .deniedByLocalSystem: self = .deniedByLocalSystem
        case .deniedByRemoteSystem: self = .deniedByRemoteSystem
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}

extension Baton_V1_OpenStatus {
    public init(_ status: OpenStatus) {
        switch status {
        case .success: self = .success
        case .appNotInstalled: self = .appNotInstalled
        case .appUnavailable: self = .appUnavailable
        case .appServiceUnavailable: self = .appServiceUnavailable
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .remoteSystemNotSupportedByApp: self = .remoteSystemNotSupportedByApp
        case .notAuthorized: self = .notAuthorized
        case .unknown: self = .unknown
        }
    }
}

extension OpenStatus {
    public init(wire: Baton_V1_OpenStatus) {
        switch wire {
        case .success: self = .success
        case .appNotInstalled: self = .appNotInstalled
        case .appUnavailable: self = .appUnavailable
        case .appServiceUnavailable: self = .appServiceUnavailable
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .remoteSystemNotSupportedByApp: self = .remoteSystemNotSupportedByApp
        case .notAuthorized: self = .notAuthorized
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}

extension Baton_V1_ResponseStatus {
    public init(_ status: ResponseStatus) {
        switch status {
        case .success: self = .success
        case .failure: self = .failure
        case .resourceLimitsExceeded: self = .resourceLimitsExceeded
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .messageSizeTooLarge: self = .messageSizeTooLarge
        case .appServiceConnectionClosed: self = .appServiceConnectionClosed
        case .unknown: self = .unknown
        }
    }
}

extension ResponseStatus {
    public init(wire: Baton_V1_ResponseStatus) {
        switch wire {
        case .success: self = .success
        case .failure: self = .failure
        case .resourceLimitsExceeded: self = .resourceLimitsExceeded
        case .remoteSystemUnavailable: self = .remoteSystemUnavailable
        case .messageSizeTooLarge: self = .messageSizeTooLarge
        case .appServiceConnectionClosed: self = .appServiceConnectionClosed
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}

extension Baton_V1_ClosedStatus {
    public init(_ status: ClosedStatus) {
        switch status {
        case .completed: self = .completed
        case .canceled: self = .canceled
        case .resourceLimitsExceeded: self = .resourceLimitsExceeded
        case .unknown: self = .unknown
        }
    }
}

extension ClosedStatus {
    public init(wire: Baton_V1_ClosedStatus) {
        switch wire {
        case .completed: self = .completed
        case .canceled: self = .canceled
        case .resourceLimitsExceeded: self = .resourceLimitsExceeded
        case .unknown, .UNRECOGNIZED: self = .unknown
        }
    }
}
