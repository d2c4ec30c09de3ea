import BatonCore
import BatonNet
import BatonWire
import NIOCore

/// A service the agent answers itself, in Swift, beside those Lua providers answer: an app's
/// `baton.playback` (see ``PlaybackService``). Opened, described and refused like any other.
protocol NativeService: Sendable {
    /// The loop the service lives on; its functions are called there.
    var eventLoop: any EventLoop { get }
    /// The reply to `message`, which came on `channel`; never fails (a failure is a reply
    /// that says so).
    func serve(_ message: ValueDictionary, from channel: NativeChannel) -> EventLoopFuture<ServiceReply>
    /// `channel` closed: nothing more is sent on it.
    func closed(_ channel: NativeChannel)
}

/// One open channel to a native service, as the service sees it: it can send the caller
/// requests of its own (the caller's `on_request` answers them).
final class NativeChannel: Sendable {
    /// Sends the caller `message`, waiting `timeout` at most for its answer; the answer, or
    /// why there is none (a closed channel answers `app_service_connection_closed`).
    let send: @Sendable (ValueDictionary, TimeAmount) -> EventLoopFuture<ServiceReply>

    init(send: @escaping @Sendable (ValueDictionary, TimeAmount) -> EventLoopFuture<ServiceReply>) {
        self.send = send
    }
}

extension Agent {
    /// The native services of the configured apps, by app and service: `baton.playback` for
    /// each app backed by a player.
    static func makeNativeServices(players: [String: any Player], media: MediaSharing) -> [ProviderKey: any NativeService] {
        var services: [ProviderKey: any NativeService] = [:]
        for (app, player) in players {
            services[ProviderKey(app: app, service: PlaybackCommand.service)] = PlaybackService(player: player, media: media)
        }
        return services
    }

    /// The ``NativeChannel`` for channel `id` of `handler`'s connection: its requests go out on
    /// the serving loop.
    func nativeChannel(for handler: AgentConnection, channel id: UInt64) -> NativeChannel {
        let loop = servingLoop
        let handle = handler.handle
        return NativeChannel { message, timeout in
            loop.flatSubmit {
                guard let handler = handle.connection, let connection = handler.connection, connection.isOpen, handler.channels[id] != nil else {
                    return loop.makeSucceededFuture(ServiceReply(status: .appServiceConnectionClosed, detail: "the channel is closed"))
                }
                let reply = loop.makePromise(of: ServiceReply.self)
                connection.send(channel: id, message: ServiceMessage(message), deadline: loop.now + timeout, completion: reply.succeed)
                return reply.futureResult
            }
        }
    }
}
