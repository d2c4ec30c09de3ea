import BatonCore
import BatonNet
import Foundation
import NIOCore

/// `baton.playback` for an app backed by a ``Player``: reads the request's command, checks
/// that a file to play can be read here, drives the player, and answers: the proof for
/// `play`, the state after any other command, or `error` and `detail` (a ``PlaybackFailure``)
/// with the response status `success`, since the service did answer. A channel that asked to
/// `watch` is sent each ``PlayerChange`` with the state after it. Confined to the player's loop.
final class PlaybackService: NativeService, @unchecked Sendable {
    let player: any Player
    /// The agent's shared media, for `share`.
    let media: MediaSharing
    var eventLoop: any EventLoop { player.eventLoop }
    /// How long a change sent to a watcher waits for its answer (the answer is not needed;
    /// the deadline keeps a caller that never answers from holding requests open).
    static let pushTimeout: TimeAmount = .seconds(5)
    /// The channels that watch, and how to stop telling each.
    private var watching: [ObjectIdentifier: NativeChannel] = [:]
    /// Stops hearing the player's changes; set while any channel watches.
    private var stopHearing: (() -> Void)?

    init(player: any Player, media: MediaSharing) {
        self.player = player
        self.media = media
    }

    func serve(_ message: ValueDictionary, from channel: NativeChannel) -> EventLoopFuture<ServiceReply> {
        let answer: EventLoopFuture<ValueDictionary>
        do {
            let command = try PlaybackCommand(message: message)
            switch command {
            case .state:
                answer = player.state().map(\.message)
            case .play(let request):
                try Self.checkReadable(request.uri)
                answer = player.play(request).map(\.message)
            case .pause, .resume, .stop, .seek, .seekBy, .volume, .mute:
                answer = player.control(command).flatMap { [player] in player.state() }.map(\.message)
            case .watch:
                watch(channel)
                answer = player.state().map(\.message)
            case .unwatch:
                closed(channel)
                answer = player.state().map(\.message)
            case .share(let request):
                answer = share(request)
            }
        } catch {
            answer = eventLoop.makeFailedFuture(error)
        }
        return answer.hop(to: eventLoop).map(ServiceReply.success).recover { error in
            .success((error as? PlaybackFailure ?? .player(ErrorWords.of(error))).message)
        }
    }

    func closed(_ channel: NativeChannel) {
        watching[ObjectIdentifier(channel)] = nil
        if watching.isEmpty {
            stopHearing?()
            stopHearing = nil
        }
    }

    /// Serves the file the player has loaded (or queued) to the request's client: only what
    /// it plays may be shared, so a caller learns no other file of this device.
    private func share(_ request: PlaybackCommand.ShareRequest) -> EventLoopFuture<ValueDictionary> {
        player.state().flatMap { [media] state in
            do {
                guard state.uri == request.uri || state.queue.contains(request.uri) else {
                    throw PlaybackFailure.badRequest("share: the player has not loaded \(request.uri); only what it plays can be shared")
                }
                guard let path = try Self.localPath(request.uri) else {
                    throw PlaybackFailure.badRequest("share: \(request.uri) is not a file of this device")
                }
                try Self.checkReadable(path)
                // Long enough to play it through, with room for pauses.
                let ttl = request.ttl ?? state.duration.map { $0 + 3600 } ?? 6 * 3600
                return media.share(path, to: request.client, host: request.host, ttl: ttl).map { shared in
                    ["url": .string(shared.url), "expires": .date(shared.expires)]
                }
            } catch {
                return media.eventLoop.makeFailedFuture(error)
            }
        }
    }

    /// Tells `channel` each change from now on (once, however often it asks).
    private func watch(_ channel: NativeChannel) {
        watching[ObjectIdentifier(channel)] = channel
        guard stopHearing == nil else { return }
        stopHearing = player.watch { [self] change in
            // The state after the change, read once for every watcher; one the player cannot
            // give is sent as nothing but the date.
            player.state().hop(to: eventLoop).whenComplete { [self] result in
                let message = change.message(state: (try? result.get()) ?? PlaybackState(at: Date()))
                for channel in watching.values {
                    channel.send(message, Self.pushTimeout).hop(to: eventLoop).whenSuccess { [self] reply in
                        // A channel gone without word (its connection dropped) is watched no more.
                        if reply.status == .appServiceConnectionClosed { closed(channel) }
                    }
                }
            }
        }
    }

    /// The local path `uri` names: a `file://` URI's path, or an absolute path as it is; nil
    /// for any other URI (and a relative path). A `file:` URI that is not one is `cannot_open`.
    static func localPath(_ uri: String) throws(PlaybackFailure) -> String? {
        if uri.hasPrefix("file://") {
            guard let url = URL(string: uri), url.isFileURL else { throw .cannotOpen("\(uri) is not a file URL") }
            return url.path
        }
        return uri.hasPrefix("/") ? uri : nil
    }

    /// A file path or `file://` URI that cannot be read here is ``PlaybackFailure/cannotOpen(_:)``
    /// at once, before the player is touched; other URIs are the player's to open.
    static func checkReadable(_ uri: String) throws(PlaybackFailure) {
        guard let path = try localPath(uri) else { return }
        guard access(path, R_OK) == 0 else {
            throw .cannotOpen("cannot read \(path) here: \(String(cString: strerror(errno)))")
        }
    }
}
