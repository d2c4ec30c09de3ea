import BatonCore
import BatonNet
import Foundation
import NIOCore

extension MPDPlayer {
    /// How long one `idle player` waits before it is ended and asked again (a deadline, so a
    /// silent MPD is found out).
    static let idleWait: TimeAmount = .seconds(50)

    func watch(_ handler: @escaping (PlayerChange) -> Void) -> () -> Void {
        eventLoop.preconditionInEventLoop()
        let stop = watchers.add(handler)
        if !idling { idle(on: nil) }
        return stop
    }

    /// Waits for MPD's player to change on a connection of its own (`idle` holds a connection),
    /// tells the watchers what changed, and waits again, while anyone watches. A connection
    /// that fails or waits past ``idleWait`` is closed and another made, after a pause.
    func idle(on given: MPDConnection?) {
        eventLoop.preconditionInEventLoop()
        guard !watchers.isEmpty, !stopping else {
            given?.close()
            idleConnection = nil
            idling = false
            return
        }
        idling = true
        let opened = given.map { eventLoop.makeSucceededFuture($0) }
            ?? MPDConnection.connect(host: host, port: port, on: eventLoop, timeout: callTimeout).flatMap { connection in
                // A fresh connection's first status only says how things stand.
                connection.command("status", timeout: self.callTimeout).map { status in
                    self.changes = MPDChangeTracker()
                    _ = self.changes.take(.init(status: status, at: Date()))
                    return connection
                }
            }
        opened.flatMap { connection in
            self.idleConnection = connection
            return connection.command("idle player", timeout: Self.idleWait)
                .flatMap { _ in connection.command("status", timeout: self.callTimeout) }
                .map { status in (connection, status) }
                .flatMapErrorThrowing { error in
                    connection.close()
                    throw error
                }
        }.whenComplete { [self] result in
            switch result {
            case .success(let (connection, status)):
                if let change = changes.take(.init(status: status, at: Date())) { watchers.tell(change) }
                idle(on: connection)
            case .failure(let error):
                // What changed until the next connection is lost: its first status starts anew.
                logger.debug("MPD's idle ended; waiting again", metadata: ["reason": "\(ErrorWords.of(error))"])
                eventLoop.scheduleTask(in: .seconds(1)) { self.idle(on: nil) }
            }
        }
    }
}
