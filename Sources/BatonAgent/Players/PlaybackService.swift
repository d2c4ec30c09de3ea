import BatonCore
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
            .success((error as? PlaybackFailure ?? .player("\(error)")).message)
        }
    }

    /// A file path or `file://` URI that cannot be read here is ``PlaybackFailure/cannotOpen(_:)``
    /// at once, before the player is touched; other URIs are the player's to open.
    static func checkReadable(_ uri: String) throws(PlaybackFailure) {
        let path: String
        if uri.hasPrefix("file://") {
            guard let url = URL(string: uri), url.isFileURL else { throw .cannotOpen("\(uri) is not a file URL") }
            path = url.path
        } else if uri.hasPrefix("/") {
            path = uri
        } else {
            return
        }
        guard access(path, R_OK) == 0 else {
            throw .cannotOpen("cannot read \(path) here: \(String(cString: strerror(errno)))")
        }
    }
}
