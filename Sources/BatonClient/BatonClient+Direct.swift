import BatonCore
import BatonNet
import NIOCore

/// Relay first, then direct: once a device answered through a relay (the broker), the
/// endpoints it advertises (``DeviceTarget/directCandidates``) are dialled in the background
/// over mutual TLS, expecting the same device and account (who answers comes from the TLS
/// handshake alone); the first that answers becomes the device's connection, so new calls go
/// there. What runs on the relayed connection (a channel, a call) ends there, and the relayed
/// connection is closed once idle. A failed attempt leaves the relay serving and is tried again
/// later (``DirectUpgrade``); a direct link that is lost sends the next call through the relay
/// again. Calls never wait for an attempt. Everything here runs on the client's loop.
extension BatonClient {
    /// The most candidates one attempt dials.
    static let directCandidateLimit = 8
    /// How often a replaced relayed connection is looked at until it is idle.
    static let retireCheck: TimeAmount = .seconds(1)

    /// `connection` to `device` was just made through a relay: it is the one a direct link
    /// would replace; an attempt starts if one is due.
    func relayed(_ device: DeviceTarget, _ connection: PeerConnection) {
        guard canGoDirect(device) else { return }
        upgrades[device.connectionKey, default: DirectUpgrade()].relay = ObjectIdentifier(connection)
        tryDirect(device)
    }

    /// A call is about to use `connection`, the device's: if it is the relayed one, an attempt
    /// starts if one is due (the retry after a failure).
    func relayInUse(_ device: DeviceTarget, _ connection: PeerConnection) {
        guard let upgrade = upgrades[device.connectionKey], upgrade.relay == ObjectIdentifier(connection) else { return }
        tryDirect(device)
    }

    /// Whether `device` may be reached directly: it has candidates, and a direct link can prove
    /// who answers (TLS, and an id to expect).
    private func canGoDirect(_ device: DeviceTarget) -> Bool {
        !device.directCandidates.isEmpty && device.deviceID != nil && options.security.trustStore != nil
    }

    private func tryDirect(_ device: DeviceTarget) {
        let key = device.connectionKey
        let candidates = Array(device.directCandidates.prefix(Self.directCandidateLimit))
        guard let number = upgrades[key]?.begin(candidates, now: .now()) else { return }
        logger.debug("trying a direct link", metadata: ["device": "\(device.deviceID ?? "")", "candidates": "\(candidates)"])
        dialDirect(device, candidates).whenComplete { [self] result in
            switch result {
            case .success(let (connection, endpoint)):
                movedDirect(device, number, connection, endpoint)
            case .failure(let error):
                guard let delay = upgrades[key]?.failed(number, now: .now()) else { return }
                logger.debug("direct link failed, staying on the broker", metadata: [
                    "device": "\(device.deviceID ?? "")", "error": "\((error as? BatonClientError)?.detail ?? "\(error)")",
                    "retry_in": "\(delay.words)",
                ])
            }
        }
    }

    /// Dials every candidate at once: the first link that proves the device, with its
    /// endpoint (later ones are closed); or why none did.
    private func dialDirect(
        _ device: DeviceTarget, _ candidates: [RemoteDevice.Endpoint]
    ) -> EventLoopFuture<(PeerConnection, RemoteDevice.Endpoint)> {
        let race = DirectRace(eventLoop.makePromise(of: (PeerConnection, RemoteDevice.Endpoint).self))
        let expectation = device.expectation(unlisted: options.unlistedAgents)
        let hello = hello, settings = dialSettings
        // Held until every dial started: one that fails at once does not end the race early.
        race.pending += 1
        for endpoint in candidates {
            let route = DeviceRoute.tcp(endpoint)
            guard let dialer = options.dialers.first(where: { $0.canDial(route) }) else {
                race.failed(endpoint, "no dialer takes TCP routes")
                continue
            }
            race.pending += 1
            dialer.dial(route, on: eventLoop, expecting: expectation, hello: hello, settings: settings).hop(to: eventLoop)
                .whenComplete { result in
                    race.pending -= 1
                    switch result {
                    case .success(let connection): race.connected(connection, endpoint)
                    case .failure(let error): race.failed(endpoint, ErrorWords.of(error))
                    }
                }
        }
        race.pending -= 1
        race.settleIfLost()
        return race.promise.futureResult
    }

    /// Attempt `number` made `connection` to `endpoint`: it becomes the device's connection,
    /// and the relayed one it replaces is let go once idle.
    private func movedDirect(_ device: DeviceTarget, _ number: Int, _ connection: PeerConnection, _ endpoint: RemoteDevice.Endpoint) {
        let key = device.connectionKey
        guard upgrades[key]?.succeeded(number, at: endpoint) == true else {
            return connection.goodbye(.unknown, "the direct link is not needed any more")
        }
        switch connections[key] {
        case .connecting?:
            // A connection is being made over the routes meanwhile: it wins, and tries again.
            upgrades[key]?.abandon(number)
            return connection.goodbye(.unknown, "the direct link is not needed any more")
        case .connected(let old)?:
            connections[key] = .connected(connection)
            if old !== connection, old.isOpen { retire(old) }
        case nil:
            connections[key] = .connected(connection)
        }
        upgrades[key]?.relay = nil
        logger.debug("moved to a direct link", metadata: ["device": "\(device.deviceID ?? "")", "at": "\(endpoint)"])
        connection.closeFuture.whenComplete { [self] _ in
            if case .connected(let current)? = connections[key], current === connection { connections[key] = nil }
            guard let delay = upgrades[key]?.lost(number, now: .now()) else { return }
            logger.debug("the direct link closed, back to the broker", metadata: [
                "device": "\(device.deviceID ?? "")", "at": "\(endpoint)", "retry_in": "\(delay.words)",
            ])
        }
    }

    /// Closes `relay` once nothing runs on it (no call waiting, no channel open).
    private func retire(_ relay: PeerConnection) {
        let id = ObjectIdentifier(relay)
        guard relay.isOpen else {
            retiring[id] = nil
            return
        }
        guard !relay.isIdle else {
            retiring[id] = nil
            logger.debug("closing the relayed connection: a direct link replaced it", metadata: ["peer": "\(relay.remoteDescription)"])
            return relay.goodbye(.unknown, "moved to a direct link")
        }
        retiring[id] = relay
        eventLoop.scheduleTask(in: Self.retireCheck) { [weak self] in
            guard let self, self.retiring[id] != nil else { return }
            self.retire(relay)
        }
    }

    /// Ends every attempt (their links are closed when they come) and every relayed connection
    /// kept for what runs on it.
    func stopUpgrades() {
        upgrades = [:]
        for relay in retiring.values { relay.goodbye(.unknown, "the client is done") }
        retiring = [:]
    }
}

/// The dials of one attempt, on the client's loop: the first link wins; the attempt fails
/// once every dial did.
private final class DirectRace: @unchecked Sendable {
    let promise: EventLoopPromise<(PeerConnection, RemoteDevice.Endpoint)>
    var pending = 0
    private var won = false
    private var failures: [String] = []

    init(_ promise: EventLoopPromise<(PeerConnection, RemoteDevice.Endpoint)>) {
        self.promise = promise
    }

    func connected(_ connection: PeerConnection, _ endpoint: RemoteDevice.Endpoint) {
        guard !won else { return connection.goodbye(.unknown, "another direct link answered first") }
        won = true
        promise.succeed((connection, endpoint))
    }

    func failed(_ endpoint: RemoteDevice.Endpoint, _ why: String) {
        failures.append("\(endpoint): \(why)")
        settleIfLost()
    }

    /// Fails the attempt when nothing is left to win it.
    func settleIfLost() {
        guard !won, pending == 0 else { return }
        won = true // settled
        promise.fail(BatonClientError.unreachable(failures.joined(separator: "; ")))
    }
}
