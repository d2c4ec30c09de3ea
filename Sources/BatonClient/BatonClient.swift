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
        /// The largest frame this side accepts.
        public var limits = FrameLimits()
        /// Who this client says it is in Hello.
        public var deviceName = ""
        public var deviceID = ""
        public var timing = PeerConnection.Timing()
        /// Mutual TLS with this device's certificate, or plaintext to loopback agents only.
        public var security = ConnectionSecurity.insecure
        /// The account an agent must prove when the target names none (a bare `host:port`):
        /// this device's own by default, `.anyAccount` to reach other accounts' anonymous apps
        /// by address.
        public var unlistedAgents = AgentExpectation.ownAccount
        public init() {}
    }

    /// The loop every connection of this client runs on.
    public let eventLoop: any EventLoop
    public let options: Options
    let logger: Logger
    /// Connections by ``DeviceTarget/connectionKey``.
    private var connections: [String: Slot] = [:]

    private enum Slot {
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
        case .connected(let connection) where connection.isOpen: return eventLoop.makeSucceededFuture(connection)
        default: break
        }
        let future = connect(device, routes: device.routes[...])
        connections[key] = .connecting(future)
        future.whenComplete { [self] result in
            if case .success(let connection) = result {
                connections[key] = .connected(connection)
            } else {
                connections[key] = nil
            }
        }
        return future
    }

    /// Tries `routes` in order until one connects; the last failure when none does. A route
    /// that answers as another device, or is refused, ends the search: its error stands.
    private func connect(_ device: DeviceTarget, routes: ArraySlice<DeviceRoute>) -> EventLoopFuture<PeerConnection> {
        guard let route = routes.first, case .tcp(let address) = route else {
            return eventLoop.makeFailedFuture(BatonClientError.unreachable("\(device): no route to it is known"))
        }
        let hello = Hello(deviceID: options.deviceID, deviceName: options.deviceName)
        let attempt = PeerConnector.connect(
            host: address.host, port: address.port, on: eventLoop, security: options.security,
            expecting: device.expectation(unlisted: options.unlistedAgents), hello: hello,
            connectTimeout: options.connectTimeout, limits: options.limits, timing: options.timing, logger: logger)
        guard routes.count > 1 else { return attempt }
        return attempt.flatMapError { [self] error in
            if error is PeerConnectionError { return eventLoop.makeFailedFuture(error) }
            logger.debug("route failed, trying the next", metadata: ["route": "\(route)", "error": "\(error)"])
            return connect(device, routes: routes.dropFirst())
        }
    }

    /// Launches `request` on `device`; the status and, if not `success`, why.
    public func launch(_ request: LaunchRequest, on device: DeviceTarget) -> EventLoopFuture<(LaunchStatus, String)> {
        connection(to: device).flatMap { $0.launch(request) }.recover { error in
            switch error as? PeerConnectionError {
            case .tooLarge(let size, let limit)?:
                return (.valueSetTooLarge, "the launch data is \(size) bytes, over the agent's limit of \(limit)")
            case .untrustedPeer?:
                return (.deniedByLocalSystem, Self.describe(error, device: device))
            case .refusedByPeer?:
                return (.deniedByRemoteSystem, Self.describe(error, device: device))
            default:
                return (.remoteSystemUnavailable, Self.describe(error, device: device))
            }
        }
    }

    /// The device and its apps.
    public func describe(_ device: DeviceTarget) -> EventLoopFuture<(DeviceInfo, [AppInfo])> {
        connection(to: device).flatMap { $0.describe() }.map { description in
            (description.device, description.apps)
        }.flatMapErrorThrowing { error in
            throw BatonClientError.unreachable(Self.describe(error, device: device))
        }
    }

    /// Opens a channel to `service` of `app` on `device`: the connection on `success`, else nil
    /// and the status with why.
    public func openService(_ service: String, app: String, on device: DeviceTarget) -> EventLoopFuture<(AppServiceConnection?, OpenStatus, String)> {
        connection(to: device).flatMap { connection in
            let channel = AppServiceConnection(device: device, app: app, service: service, connection: connection)
            return connection.open(service: service, app: app, handler: channel).map { id, status, detail in
                guard let id else { return (nil, status, detail) }
                channel.opened(id)
                return (channel, .success, "")
            }
        }.recover { error in
            switch error as? PeerConnectionError {
            case .untrustedPeer?, .refusedByPeer?: (nil, .notAuthorized, Self.describe(error, device: device))
            default: (nil, .remoteSystemUnavailable, Self.describe(error, device: device))
            }
        }
    }

    /// Sends one message on a channel opened for it, then closes the channel.
    public func send(_ message: ValueDictionary, to service: String, app: String, on device: DeviceTarget) -> EventLoopFuture<ServiceReply> {
        openService(service, app: app, on: device).flatMap { [self] channel, status, detail in
            guard let channel else {
                let replyStatus: ResponseStatus = status == .remoteSystemUnavailable ? .remoteSystemUnavailable : .failure
                return eventLoop.makeSucceededFuture(ServiceReply(status: replyStatus, detail: "open: \(status.rawValue)\(detail.isEmpty ? "" : ": " + detail)"))
            }
            return channel.send(message).always { _ in channel.close() }
        }
    }

    /// Closes every connection.
    public func shutdown() {
        eventLoop.execute { [self] in
            for case .connected(let connection) in connections.values {
                connection.goodbye(.unknown, "the client is done")
            }
            connections = [:]
        }
    }

    /// Why `device` could not be reached, in a person's words.
    static func describe(_ error: any Error, device: some CustomStringConvertible) -> String {
        if case ChannelError.connectTimeout = error { return "\(device): no answer within the connect timeout" }
        if let failure = error as? NIOConnectionError {
            if failure.connectionErrors.isEmpty { return "\(device): cannot resolve \(failure.host)" }
            let causes = failure.connectionErrors.map { attempt -> String in
                if let io = attempt.error as? IOError, io.errnoCode == ECONNREFUSED { return "connection refused (is an agent listening there?)" }
                return "\(attempt.error)"
            }
            return "\(device): \(Set(causes).sorted().joined(separator: "; "))"
        }
        return "\(device): \(error)"
    }
}

/// Why a client call that has no status of its own failed.
public enum BatonClientError: Error, Sendable, CustomStringConvertible {
    case unreachable(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "remote_system_unavailable: \(why)"
        }
    }
}
