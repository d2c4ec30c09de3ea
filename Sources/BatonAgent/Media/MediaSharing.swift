import BatonCore
import Foundation
import Logging
import NIOCore

/// What an agent shares of its files: the offers, and the ``MediaServer`` that serves them,
/// started on the first share (no port is open on a device that never shares). Confined to
/// the agent's runtime loop.
final class MediaSharing: @unchecked Sendable {
    let offers = MediaOffers()
    let eventLoop: any EventLoop
    let logger: Logger
    /// Where the server listens: the agent's own listening host, and `--media-port` (0: any).
    var host = "0.0.0.0"
    var port = 0
    private var server: EventLoopFuture<MediaServer>?

    init(eventLoop: any EventLoop, logger: Logger) {
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Offers the file at `path` to `client` for `ttl` seconds: the URL it fetches it at, on
    /// `host` (the name the asker reaches this device by), and when that ends.
    func share(_ path: String, to client: String, host urlHost: String, ttl: Double) -> EventLoopFuture<(url: String, expires: Date)> {
        eventLoop.preconditionInEventLoop()
        let started = server ?? MediaServer.start(host: host, port: port, offers: offers, on: eventLoop, logger: logger).map { [logger] server in
            logger.info("serving shared media", metadata: ["port": "\(server.port)"])
            return server
        }
        server = started
        // One that failed to start is tried again by the next share.
        started.whenFailure { [self] _ in server = nil }
        return started.map { [offers] server in
            let token = offers.offer(path, to: client, until: .now() + .nanoseconds(Int64(ttl * 1e9)))
            let name = (path as NSString).lastPathComponent.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "media"
            let bracketed = urlHost.contains(":") && !urlHost.hasPrefix("[") ? "[\(urlHost)]" : urlHost
            return ("http://\(bracketed):\(server.port)/media/\(token)/\(name)", Date().addingTimeInterval(ttl))
        }.flatMapErrorThrowing { error in
            throw PlaybackFailure.player("cannot serve \(path): \(error)")
        }
    }

    func close() {
        server?.whenSuccess { $0.close() }
    }
}
