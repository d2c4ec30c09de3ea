import BatonCore
import BatonNet
import Foundation
import NIOCore

/// `baton.playback` for an app backed by a ``Player``: reads the request's command, checks
/// that a file to play can be read here, drives the player, and answers: the proof for
/// `play`, the state after any other command, or `error` and `detail` (a ``PlaybackFailure``)
/// with the response status `success`, since the service did answer.
enum PlaybackService {
    /// The answer to `message`.
    static func serve(_ message: ValueDictionary, player: any Player, on eventLoop: any EventLoop) -> EventLoopFuture<ServiceReply> {
        let answer: EventLoopFuture<ValueDictionary>
        do {
            let command = try PlaybackCommand(message: message)
            switch command {
            case .state:
                answer = player.state().map(\.message)
            case .play(let request):
                try checkReadable(request.uri)
                answer = player.play(request).map(\.message)
            case .pause, .resume, .stop, .seek, .seekBy, .volume, .mute:
                answer = player.control(command).flatMap { player.state() }.map(\.message)
            }
        } catch {
            answer = eventLoop.makeFailedFuture(error)
        }
        return answer.hop(to: eventLoop).map(ServiceReply.success).recover { error in
            .success((error as? PlaybackFailure ?? .player(ErrorWords.of(error))).message)
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
