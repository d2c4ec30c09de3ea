import BatonCore
import BatonNet
import BatonWire
import NIOCore

/// Makes links through the account's broker (``DeviceRoute/broker(_:)``): a sealed handshake
/// with the device's agent over its inbox, then the session as over TCP. A device that is not
/// on the broker fails within one broker round trip (nobody subscribes to its inbox), never by
/// waiting for the deadline.
public struct BrokerDialer: LinkDialer {
    /// The process's broker connection; links are made on its loop.
    public let hub: BrokerHub

    public init(hub: BrokerHub) {
        self.hub = hub
    }

    public func canDial(_ route: DeviceRoute) -> Bool {
        if case .broker(let route) = route { return route.account == hub.topics.account }
        return false
    }

    public func dial(
        _ route: DeviceRoute, on eventLoop: any EventLoop, expecting: PeerExpectation, hello: Hello, settings: DialSettings
    ) -> EventLoopFuture<PeerConnection> {
        guard case .broker(let target) = route, target.account == hub.topics.account else {
            return eventLoop.makeFailedFuture(BrokerLinkError.refused("\(route) is not on this account's broker"))
        }
        // The session lives on the link's loop, and the client calls it on its own: one loop.
        guard hub.eventLoop === eventLoop else {
            return eventLoop.makeFailedFuture(BrokerLinkError.refused("the broker connection runs on another event loop than the client"))
        }
        do {
            let link = BrokerLink.initiating(
                target, hub: hub, expectation: expecting.account, limits: settings.limits, logger: settings.logger)
            let connection = settings.clientConnection(over: link, hello: hello)
            link.session = connection
            link.startInitiating()
            return connection.handshake(within: settings.connectTimeout)
        }
    }
}
