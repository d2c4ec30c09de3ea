import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Baton's Swift API: launch URIs on devices, describe them, and open app-service channels.
///
/// A device is reached by its identity and its routes (a ``DeviceTarget``, from discovery or
/// a bare `host:port`): one connection per device, shared by every launch and channel, opened
/// on first use (trying its routes in order) and opened again after a failure. Every failure
/// becomes a status, never an exception: an unreachable device gives
/// `remote_system_unavailable` within the connect timeout.
public final class BatonClient: @unchecked Sendable {
    /// Settings for every connection.
    public struct Options: Sendable {
        /// How long connecting and the handshake may take, per route.
        public var connectTimeout: TimeAmount = .seconds(3)
        /// How long a call waits for its answer, connecting included, unless it says otherwise;
        /// the agent hears it too, and stops the work when it passes.
        public var requestTimeout: TimeAmount = .seconds(30)
        /// The largest frame this side accepts.
        public var limits = FrameLimits()
        /// Who this client says it is in Hello.
        public var deviceName = ""
        public var deviceID = ""
        /// The W3C `traceparent` said in Hello, so that agents log under the caller's trace;
        /// empty for none.
        public var traceparent = ""
        public var timing = PeerConnection.Timing()
        /// Mutual TLS with this device's certificate, or plaintext to loopback agents only.
        public var security = ConnectionSecurity.insecure
        /// The account an agent must prove when the target names none (a bare `host:port`):
        /// this device's own by default, `.anyAccount` to reach other accounts' anonymous apps
        /// by address.
        public var unlistedAgents = AgentExpectation.ownAccount
        /// How routes are dialled: each route with the first dialer that takes its kind; a
        /// route none takes is skipped. TCP only by default.
        public var dialers: [any LinkDialer] = [TCPDialer()]
        public init() {}
    }

    /// The loop every connection of this client runs on.
    public let eventLoop: any EventLoop
    public let options: Options
    let logger: Logger
    /// Connections by ``DeviceTarget/connectionKey``.
    var connections: [String: Slot] = [:]
    /// Moves from a relay to a direct link, by ``DeviceTarget/connectionKey`` (see
    /// `BatonClient+Direct.swift`).
    var upgrades: [String: DirectUpgrade] = [:]
    /// Relayed connections a direct link replaced, closed once idle.
    var retiring: [ObjectIdentifier: PeerConnection] = [:]

    enum Slot {
        case connecting(EventLoopFuture<PeerConnection>)
        case connected(PeerConnection)
    }

    public init(eventLoop: any EventLoop, options: Options = Options(), logger: Logger = Logger(label: "baton.client")) {
        self.eventLoop = eventLoop
        self.options = options
        self.logger = logger
    }

    /// The connection to `device`, opened if there is none open.
    func connection(to device: DeviceTarget) -> EventLoopFuture<PeerConnection> {
        guard eventLoop.inEventLoop else { return eventLoop.flatSubmit { self.connection(to: device) } }
        let key = device.connectionKey
        switch connections[key] {
        case .connecting(let future): return future // share it
        case .connected(let connection) where connection.isOpen:
            relayInUse(device, connection)
            return eventLoop.makeSucceededFuture(connection)
        default: break
        }
        let reached = connectRoute(device, routes: device.routes[...])
        let future = reached.map(\.connection)
        connections[key] = .connecting(future)
        reached.whenComplete { [self] result in
            if case .success(let (connection, route)) = result {
                connections[key] = .connected(connection)
                // Through a relay: its direct endpoints are tried in the background.
                if route.endpoint == nil { relayed(device, connection) }
            } else {
                connections[key] = nil
            }
        }
        return future
    }

    /// Tries `routes` in order until one connects, each with the first of ``Options/dialers``
    /// that takes its kind (a route none takes is skipped); the first tried route's failure
    /// when none does. A route that answers as another device goes on to the next: a stranger
    /// may have put its address beside the device's own.
    func connect(_ device: DeviceTarget, routes: ArraySlice<DeviceRoute>) -> EventLoopFuture<PeerConnection> {
        connectRoute(device, routes: routes).map(\.connection)
    }

    /// As ``connect(_:routes:)``, with the route that connected.
    func connectRoute(
        _ device: DeviceTarget, routes: ArraySlice<DeviceRoute>
    ) -> EventLoopFuture<(connection: PeerConnection, route: DeviceRoute)> {
        var routes = routes
        var dialer: (any LinkDialer)?
        while let route = routes.first {
            dialer = options.dialers.first { $0.canDial(route) }
            if dialer != nil { break }
            logger.debug("no dialer takes this route, skipping it", metadata: ["route": "\(route)"])
            routes = routes.dropFirst()
        }
        guard let route = routes.first, let dialer else {
            return eventLoop.makeFailedFuture(BatonClientError.unreachable("\(device): no route to it is known"))
        }
        let attempt = dialer.dial(
            route, on: eventLoop, expecting: device.expectation(unlisted: options.unlistedAgents), hello: hello, settings: dialSettings
        ).map { (connection: $0, route: route) }
        let rest = routes.dropFirst()
        guard rest.contains(where: { route in options.dialers.contains { $0.canDial(route) } }) else { return attempt }
        return attempt.flatMapError { [self] error in
            logger.debug("route failed, trying the next", metadata: ["route": "\(route)", "error": "\(error)"])
            return connectRoute(device, routes: rest).flatMapErrorThrowing { _ in throw error }
        }
    }

    /// What this client says in Hello.
    var hello: Hello {
        Hello(deviceID: options.deviceID, deviceName: options.deviceName, traceparent: options.traceparent)
    }

    /// What every dial of this client is made with.
    var dialSettings: DialSettings {
        var timing = options.timing
        timing.requestTimeout = options.requestTimeout
        return DialSettings(
            security: options.security, connectTimeout: options.connectTimeout, limits: options.limits, timing: timing, logger: logger)
    }

    /// The deadline of a call that waits `timeout` (nil: ``Options/requestTimeout``) from now.
    private func deadline(_ timeout: TimeAmount?) -> NIODeadline {
        .now() + (timeout ?? options.requestTimeout)
    }

    /// What a caller hears when its call waited `timeout` (nil: ``Options/requestTimeout``)
    /// in vain: the wait it gave, not what was left of it by the time the request went out.
    private func timedOut(_ timeout: TimeAmount?) -> String {
        "timed out: no answer within \((timeout ?? options.requestTimeout).words)"
    }

    /// `future`, or `timedOut` if `deadline` passes first (while connecting, say).
    private func racing<T: Sendable>(
        _ future: EventLoopFuture<T>, until deadline: NIODeadline, _ timedOut: @escaping @Sendable () -> T
    ) -> EventLoopFuture<T> {
        let promise = eventLoop.makePromise(of: T.self)
        let timer = eventLoop.scheduleTask(deadline: deadline) { promise.succeed(timedOut()) }
        future.hop(to: eventLoop).whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return promise.futureResult
    }

    /// Launches `request` on `device`, waiting `timeout` at most (nil: ``Options/requestTimeout``):
    /// the status and, if not `success`, why (`unknown`, "timed out: ...", when it passes).
    /// ``launchOutcome(_:on:timeout:)`` says why typed too.
    public func launch(_ request: LaunchRequest, on device: DeviceTarget, timeout: TimeAmount? = nil) -> EventLoopFuture<(LaunchStatus, String)> {
        launchOutcome(request, on: device, timeout: timeout).map { ($0.status, $0.detail) }
    }

    /// Launches `request` on `device`, waiting `timeout` at most (nil: ``Options/requestTimeout``):
    /// the status, why in words and why typed (a launch that timed out is `unknown` with
    /// cause `timed_out`).
    public func launchOutcome(_ request: LaunchRequest, on device: DeviceTarget, timeout: TimeAmount? = nil) -> EventLoopFuture<RequestOutcome<LaunchStatus>> {
        let deadline = deadline(timeout), timedOut = timedOut(timeout)
        let launched = connection(to: device).flatMap { $0.launch(request, deadline: deadline) }.map { status, detail in
            RequestOutcome(status, detail: detail)
        }.recover { error in
            let (cause, detail) = Self.failure(error, device: device, timedOut: timedOut)
            return RequestOutcome(Self.launchStatus(cause), detail: detail, cause: cause)
        }
        return racing(launched, until: deadline) { RequestOutcome(.unknown, detail: timedOut, cause: .timedOut) }
    }

    /// The device and its apps, waiting `timeout` at most; fails with ``BatonClientError``
    /// (whose ``BatonClientError/cause`` says why).
    public func describe(_ device: DeviceTarget, timeout: TimeAmount? = nil) -> EventLoopFuture<(DeviceInfo, [AppInfo])> {
        let deadline = deadline(timeout), timedOut = timedOut(timeout)
        let described = connection(to: device).flatMap { connection in
            connection.describe(deadline: deadline).map { (connection.peerIdentity, $0) }
        }.map { [options] peer, description -> Result<(DeviceInfo, [AppInfo]), BatonClientError> in
            // A name a device of this account gives over TLS is what names resolve to.
            if peer?.authorization == .sameAccount, let id = peer?.deviceID {
                options.security.trustStore?.known.learnName(description.device.name, for: id)
            }
            return .success((description.device, description.apps))
        }.recover { error in
            let (cause, detail) = Self.failure(error, device: device, timedOut: timedOut)
            return .failure(BatonClientError(cause, detail))
        }
        return racing(described, until: deadline) { .failure(.timedOut(timedOut)) }.flatMapResult { $0 }
    }

    /// Opens a channel to `service` of `app` on `device`, waiting `timeout` at most: the
    /// connection on `success`, else nil and the status with why.
    public func openService(
        _ service: String, app: String, on device: DeviceTarget, timeout: TimeAmount? = nil
    ) -> EventLoopFuture<(AppServiceConnection?, OpenStatus, String)> {
        openServiceOutcome(service, app: app, on: device, timeout: timeout).map { ($0.0, $0.1.status, $0.1.detail) }
    }

    /// As ``openService(_:app:on:timeout:)``, with why typed: the connection on `success`,
    /// and the outcome.
    public func openServiceOutcome(
        _ service: String, app: String, on device: DeviceTarget, timeout: TimeAmount? = nil
    ) -> EventLoopFuture<(AppServiceConnection?, RequestOutcome<OpenStatus>)> {
        openService(service, app: app, on: device, deadline: deadline(timeout), timedOut: timedOut(timeout))
    }

    private func openService(
        _ service: String, app: String, on device: DeviceTarget, deadline: NIODeadline, timedOut: String
    ) -> EventLoopFuture<(AppServiceConnection?, RequestOutcome<OpenStatus>)> {
        let opened = connection(to: device).flatMap { connection in
            let channel = AppServiceConnection(device: device, app: app, service: service, connection: connection)
            return connection.open(service: service, app: app, handler: channel, deadline: deadline).map {
                id, status, detail -> (AppServiceConnection?, RequestOutcome<OpenStatus>) in
                guard let id else { return (nil, RequestOutcome(status, detail: detail)) }
                channel.opened(id)
                return (channel, RequestOutcome(.success))
            }
        }.recover { error -> (AppServiceConnection?, RequestOutcome<OpenStatus>) in
            let (cause, detail) = Self.failure(error, device: device, timedOut: timedOut)
            return (nil, RequestOutcome(Self.openStatus(cause), detail: detail, cause: cause))
        }
        return racing(opened, until: deadline) { (nil, RequestOutcome(.unknown, detail: timedOut, cause: .timedOut)) }
    }

    /// Sends one message on a channel opened for it, then closes the channel; `timeout` (nil:
    /// ``Options/requestTimeout``) covers the whole. A channel that did not open is a reply
    /// whose cause is the open's (`refused` for an app this caller may not reach, ...).
    public func send(
        _ message: ValueDictionary, to service: String, app: String, on device: DeviceTarget, timeout: TimeAmount? = nil
    ) -> EventLoopFuture<ServiceReply> {
        let deadline = deadline(timeout), timedOut = timedOut(timeout)
        return openService(service, app: app, on: device, deadline: deadline, timedOut: timedOut).flatMap { [self] channel, opened in
            guard let channel else {
                let replyStatus: ResponseStatus = switch opened.status {
                case .remoteSystemUnavailable: .remoteSystemUnavailable
                case .unknown: .unknown
                default: .failure
                }
                // The open's status when the reply's does not say it already.
                let detail = replyStatus.rawValue == opened.status.rawValue
                    ? opened.detail : "the channel did not open: \(opened.status.rawValue)\(opened.detail.isEmpty ? "" : ": " + opened.detail)"
                return eventLoop.makeSucceededFuture(ServiceReply(status: replyStatus, detail: detail, cause: opened.cause))
            }
            return channel.send(message, deadline: deadline).always { _ in channel.close() }.map { reply in
                // The wait the caller gave, not what was left of it once the channel was open.
                reply.cause == .timedOut ? ServiceReply(status: .unknown, detail: timedOut, cause: .timedOut) : reply
            }
        }
    }

    /// Closes every connection.
    public func shutdown() {
        eventLoop.execute { [self] in
            for case .connected(let connection) in connections.values {
                connection.goodbye(.unknown, "the client is done")
            }
            connections = [:]
            stopUpgrades()
        }
    }

    /// Why a request to `device` that met `error` failed: its cause, and the words for it
    /// (`timedOut` when it is a timeout). The one place connection errors become causes.
    static func failure(_ error: any Error, device: some CustomStringConvertible, timedOut: String) -> (FailureCause, String) {
        if let clientError = error as? BatonClientError { return (clientError.cause, clientError.detail) }
        let cause = (error as? PeerConnectionError)?.cause ?? .unreachable
        switch error as? PeerConnectionError {
        case .timedOut?: return (cause, timedOut)
        case .tooLarge(let size, let limit)?: return (cause, "the request is \(size) bytes, over the agent's limit of \(limit)")
        default: return (cause, describe(error, device: device))
        }
    }

    /// The launch status a request that failed for `cause` answers with.
    public static func launchStatus(_ cause: FailureCause) -> LaunchStatus {
        switch cause {
        case .timedOut: .unknown
        case .tooLarge: .valueSetTooLarge
        case .denied: .deniedByLocalSystem
        case .refused: .deniedByRemoteSystem
        default: .remoteSystemUnavailable
        }
    }

    /// The open status a request that failed for `cause` answers with.
    static func openStatus(_ cause: FailureCause) -> OpenStatus {
        switch cause {
        case .timedOut: .unknown
        case .denied, .refused: .notAuthorized
        default: .remoteSystemUnavailable
        }
    }

    /// Why `device` could not be reached, in a person's words.
    static func describe(_ error: any Error, device: some CustomStringConvertible) -> String {
        "\(device): \(ErrorWords.of(error))"
    }
}

/// Why a client call that has no status of its own (describe) failed: its cause and why in
/// words.
public struct BatonClientError: Error, Sendable, CustomStringConvertible {
    /// Why, typed.
    public let cause: FailureCause
    /// Why, in words.
    public let detail: String

    public init(_ cause: FailureCause, _ detail: String) {
        self.cause = cause
        self.detail = detail
    }

    /// The device could not be reached, or would not answer.
    public static func unreachable(_ why: String) -> BatonClientError { BatonClientError(.unreachable, why) }
    /// No answer came within the call's timeout.
    public static func timedOut(_ why: String) -> BatonClientError { BatonClientError(.timedOut, why) }

    /// The status a launch would have had, then why: `remote_system_unavailable: ...`,
    /// `denied_by_local_system: ...`; a timeout says only why.
    public var description: String {
        cause == .timedOut ? detail : "\(BatonClient.launchStatus(cause).rawValue): \(detail)"
    }
}
