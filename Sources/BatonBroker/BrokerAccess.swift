import BatonClient
import BatonNet
import BatonSecurity
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// One process's way to the account's broker, as a client: the broker's endpoint (TLS with
/// this device's certificate, checked against the broker's CA) and, made on first use, a
/// client hub on the loop that asks (the loop its ``BatonClient`` runs on), with the dialer and
/// the presence source that go with it.
public final class BrokerAccess: Sendable {
    public let settings: BrokerSettings
    let logger: Logger
    private let trustStore: @Sendable () throws -> TrustStore?
    private let state = NIOLockedValueBox(State())

    private struct State {
        var hubs: [ObjectIdentifier: BrokerHub] = [:]
        var endpoint: (BrokerHub.Endpoint, TrustStore)?
    }

    /// Access to the broker `settings` name, as the device of the trust store `trustStore`
    /// gives when first needed (nil: plaintext connections, which reach no broker).
    public init(settings: BrokerSettings, logger: Logger, trustStore: @escaping @Sendable () throws -> TrustStore?) {
        self.settings = settings
        self.logger = logger
        self.trustStore = trustStore
    }

    /// Where the broker is: with TLS (`mqtts://`) this device's certificate chain and key, and
    /// the broker's CA (the account's unless the settings name another), its name checked.
    public static func endpoint(_ settings: BrokerSettings, credentials: DeviceCredentials) throws -> BrokerHub.Endpoint {
        guard settings.scheme == .mqtts else { return BrokerHub.Endpoint(host: settings.host, port: settings.port, tls: nil) }
        let (chain, key) = try TLSIdentity.presented(by: credentials)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateChain = chain.map { .certificate($0) }
        tls.privateKey = .privateKey(key)
        tls.minimumTLSVersion = .tlsv12
        if let pem = settings.caPEM {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        } else {
            tls.trustRoots = .certificates([chain[1]])
        }
        return BrokerHub.Endpoint(host: settings.host, port: settings.port, tls: tls)
    }

    /// The client hub on `loop`, made and started on first use; nil without an account (a
    /// plaintext run).
    public func hub(on loop: any EventLoop) throws -> BrokerHub? {
        let made = try state.withLockedValue { state -> (BrokerHub, isNew: Bool)? in
            let key = ObjectIdentifier(loop)
            if let hub = state.hubs[key] { return (hub, false) }
            if state.endpoint == nil {
                guard let trustStore = try trustStore() else { return nil }
                state.endpoint = (try Self.endpoint(settings, credentials: trustStore.credentials), trustStore)
            }
            let (endpoint, trustStore) = state.endpoint!
            let hub = try BrokerHub(endpoint: endpoint, role: .client, trustStore: trustStore, eventLoop: loop, logger: logger)
            state.hubs[key] = hub
            return (hub, true)
        }
        guard let (hub, isNew) = made else { return nil }
        // Connecting early saves a round trip (whatever uses the hub first starts it anyway).
        if isNew, loop.inEventLoop {
            hub.start()
        } else if isNew {
            loop.execute { hub.start() }
        }
        return hub
    }

    /// The dialers a client on `loop` uses: TCP, then the broker.
    public func dialers(on loop: any EventLoop) -> [any LinkDialer] {
        do {
            guard let hub = try hub(on: loop) else { return [TCPDialer()] }
            return [TCPDialer(), BrokerDialer(hub: hub)]
        } catch {
            logger.error("the broker cannot be used", metadata: ["broker": "\(settings.url)", "error": "\(error)"])
            return [TCPDialer()]
        }
    }

    /// The presence source for a directory whose client runs on `client`'s loop.
    public func sources(for client: BatonClient) -> [any DeviceSource] {
        guard let hub = try? hub(on: client.eventLoop) else { return [] }
        return [BrokerDeviceSource(hub: hub, logger: logger) { [weak client] target in
            guard let client else { return hub.eventLoop.makeFailedFuture(BrokerLinkError.closed("the client is gone")) }
            return client.describe(target, timeout: .seconds(5)).map(\.0)
        }]
    }

    /// Disconnects every hub made (each says DISCONNECT); nil when none was.
    public func stop() -> EventLoopFuture<Void>? {
        let all = state.withLockedValue { state in
            defer { state.hubs = [:] }
            return Array(state.hubs.values)
        }
        guard let first = all.first else { return nil }
        return EventLoopFuture.andAllComplete(all.map { $0.stop() }, on: first.eventLoop)
    }
}
