import BatonCore
import BatonNet
import NIOCore

extension BatonClient {
    /// Asks `device` to describe itself within `timeout`, as a liveness check does. When it
    /// does not answer in time (or fails otherwise), its connection is closed, so that the next check connects
    /// afresh: a peer whose link was pulled leaves its connection open (until TCP gives up),
    /// and a request on it would wait, and answer late once the link is back.
    public func probe(_ device: DeviceTarget, timeout: TimeAmount) -> EventLoopFuture<DeviceInfo> {
        describe(device, timeout: timeout).map(\.0).flatMapError { [self] error in
            dropConnection(to: device)
            return eventLoop.makeFailedFuture(error)
        }
    }

    /// Closes the connection to `device`, if one is open; the next call opens another.
    func dropConnection(to device: DeviceTarget) {
        eventLoop.execute { [self] in
            let key = device.connectionKey
            guard case .connected(let connection)? = connections[key] else { return }
            connections[key] = nil
            connection.goodbye(.timeout, "no answer to a liveness check")
        }
    }
}

extension BatonClient {
    /// The device's description, asked over a connection of its own at `device`'s routes
    /// within `timeout`, which joins the shared connections once it answers (when there is
    /// none to the device yet), so that the next call uses it. A route that may be stale (where
    /// a device was last reached) is tried this way: while it hangs, a call to the device found
    /// elsewhere does not wait on it.
    public func describeApart(_ device: DeviceTarget, timeout: TimeAmount) -> EventLoopFuture<DeviceInfo> {
        guard eventLoop.inEventLoop else { return eventLoop.flatSubmit { self.describeApart(device, timeout: timeout) } }
        let deadline = NIODeadline.now() + timeout
        let outcome = Outcome(eventLoop.makePromise(of: DeviceInfo.self))
        let timer = eventLoop.scheduleTask(deadline: deadline) {
            outcome.complete(.failure(BatonClientError.timedOut("timed out: no answer within \(timeout.words)")))
        }
        outcome.promise.futureResult.whenComplete { _ in timer.cancel() }
        connect(device, routes: device.routes[...]).hop(to: eventLoop).whenComplete { [self] result in
            let connection: PeerConnection
            switch result {
            case .failure(let error): return outcome.complete(.failure(error))
            case .success(let connected): connection = connected
            }
            guard !outcome.done else { return connection.goodbye(.unknown, "the client stopped waiting") }
            connection.describe(deadline: deadline).hop(to: eventLoop).whenComplete { [self] described in
                switch described {
                case .failure(let error):
                    connection.goodbye(.unknown, "no description")
                    outcome.complete(.failure(error))
                case .success(let description):
                    // A name a device of this account gives over TLS is what names resolve to.
                    if let peer = connection.peerIdentity, peer.authorization == .sameAccount, let id = peer.deviceID {
                        options.security.trustStore?.known.learnName(description.device.name, for: id)
                    }
                    let key = device.connectionKey
                    if !outcome.done, connections[key] == nil, connection.isOpen {
                        connections[key] = .connected(connection)
                    } else {
                        connection.goodbye(.unknown, "the client has a connection to the device already")
                    }
                    outcome.complete(.success(description.device))
                }
            }
        }
        return outcome.promise.futureResult
    }

    /// A promise completed once, by whichever comes first; on the client's loop.
    private final class Outcome: @unchecked Sendable {
        let promise: EventLoopPromise<DeviceInfo>
        private(set) var done = false

        init(_ promise: EventLoopPromise<DeviceInfo>) {
            self.promise = promise
        }

        func complete(_ result: Result<DeviceInfo, any Error>) {
            guard !done else { return }
            done = true
            promise.completeWith(result)
        }
    }
}
