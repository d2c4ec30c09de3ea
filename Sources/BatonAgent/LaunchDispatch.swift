import BatonCore

/// What a launch resolves to, in Rome's order.
public enum LaunchTarget: Sendable {
    /// Launch `uri` with this app.
    case app(AgentConfiguration.App, uri: String)
    /// Launch `uri` with the device's default handler.
    case handler(AgentConfiguration.Handler, uri: String)
    /// Nothing to run: answer with this status.
    case refused(LaunchStatus, detail: String)
}

extension AgentConfiguration {
    /// Resolves `request`: the named app (`app_unavailable` if absent, `protocol_unavailable` if
    /// it does not take the scheme); else the first preferred app the device has that takes the
    /// scheme; else the device's handler for the scheme; else any app that takes it; else the
    /// fallback URI the same way (without the app and preferences); else
    /// `protocol_unavailable`.
    ///
    /// For a caller of another account (`anonymousCaller`), only the apps marked anonymous
    /// exist: no handler, no other app. What it may not launch answers `denied_by_remote_system`
    /// in the same words whether it exists or not, so that launching tells a stranger no more
    /// than Describe does.
    public func resolve(_ request: LaunchRequest, anonymousCaller: Bool = false) -> LaunchTarget {
        let visible = anonymousCaller ? { (app: App) in app.info.anonymous } : { (_: App) in true }
        if let id = request.appID, !id.isEmpty {
            guard let app = app(id), visible(app) else {
                if anonymousCaller { return .refused(.deniedByRemoteSystem, detail: "no app \(id) on \(device.name) serves other accounts") }
                return .refused(.appUnavailable, detail: "no app \(id) on \(device.name)")
            }
            guard let scheme = LaunchRequest.scheme(of: request.uri), app.takes(scheme) else {
                return .refused(.protocolUnavailable, detail: "\(id) does not take \(Self.describeScheme(request.uri))")
            }
            return .app(app, uri: request.uri)
        }
        if let target = resolve(uri: request.uri, preferring: request.preferredAppIDs, anonymousCaller: anonymousCaller, visible) {
            return target
        }
        if let fallback = request.fallbackURI, !fallback.isEmpty,
           let target = resolve(uri: fallback, preferring: [], anonymousCaller: anonymousCaller, visible) {
            return target
        }
        if anonymousCaller {
            return .refused(.deniedByRemoteSystem, detail: "nothing on \(device.name) takes \(Self.describeScheme(request.uri)) from other accounts")
        }
        return .refused(.protocolUnavailable, detail: "nothing on \(device.name) takes \(Self.describeScheme(request.uri))")
    }

    private func resolve(uri: String, preferring preferred: [String], anonymousCaller: Bool, _ visible: (App) -> Bool) -> LaunchTarget? {
        guard let scheme = LaunchRequest.scheme(of: uri) else { return nil }
        for id in preferred {
            if let app = app(id), visible(app), app.takes(scheme) { return .app(app, uri: uri) }
        }
        // Handlers serve the device's own account only.
        if !anonymousCaller, let handler = handlers[scheme] { return .handler(handler, uri: uri) }
        if let app = apps.first(where: { visible($0) && $0.takes(scheme) }) { return .app(app, uri: uri) }
        return nil
    }

    private static func describeScheme(_ uri: String) -> String {
        LaunchRequest.scheme(of: uri).map { "\($0): URIs" } ?? "\"\(uri)\" (it has no scheme)"
    }
}
