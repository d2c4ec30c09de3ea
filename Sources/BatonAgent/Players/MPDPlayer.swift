import BatonCore
import BatonNet
import Foundation
import Logging
import NIOCore

/// An app's MPD: a running `mpd` reached over TCP, connected to when first needed and again
/// after MPD closes an idle connection. MPD takes files relative to its music directory, so
/// paths under ``musicDirectory`` are handed to it that way and others cannot be opened; a
/// file there that MPD has not indexed yet is indexed on demand. Confined to its loop.
final class MPDPlayer: Player, @unchecked Sendable {
    let eventLoop: any EventLoop
    let host: String
    let port: Int
    let musicDirectory: String?
    let logger: Logger
    /// The deadline of each call to MPD.
    var callTimeout: TimeAmount = .seconds(2)
    /// How long play waits between the two readings that prove playback advances.
    var settle: TimeAmount = .milliseconds(300)
    /// How long play waits for MPD to index a file it did not know (see ``add(_:local:uri:on:)``).
    var indexTimeout: TimeAmount = .seconds(10)
    private var connection: MPDConnection?
    private var connecting: EventLoopFuture<MPDConnection>?
    /// The volume before a muted play, to give back when unmuted.
    private var unmutedVolume: Int?
    /// Who hears MPD's changes (``watch(_:)``), and whether a connection waits in `idle` for them.
    let watchers = Watchers<PlayerChange>()
    var idling = false
    var idleConnection: MPDConnection?
    var changes = MPDChangeTracker()
    /// Set at shutdown: no more waiting for changes.
    var stopping = false

    /// MPD's `elapsed` has milliseconds and moves with its output's buffer; a seek answers
    /// once MPD plays from there.
    static let timing = PlayerTiming(granularity: 0.05, seekLatency: 0.01)

    init(host: String, port: Int, musicDirectory: String?, on eventLoop: any EventLoop, logger: Logger) {
        self.host = host
        self.port = port
        self.musicDirectory = musicDirectory
        self.eventLoop = eventLoop
        self.logger = logger
    }

    func start() {
        eventLoop.execute { [self] in
            connect().whenFailure { [logger, host, port] error in
                logger.warning("MPD is not available yet", metadata: ["address": "\(host):\(port)", "reason": "\(ErrorWords.of(error))"])
            }
        }
    }

    private func connect() -> EventLoopFuture<MPDConnection> {
        eventLoop.preconditionInEventLoop()
        if let connection, connection.isOpen { return eventLoop.makeSucceededFuture(connection) }
        if let connecting { return connecting }
        let made = MPDConnection.connect(host: host, port: port, on: eventLoop, timeout: callTimeout)
        connecting = made
        made.whenComplete { [self] result in
            connecting = nil
            guard case .success(let opened) = result else { return }
            opened.callTimeout = callTimeout
            connection = opened
        }
        return made.flatMapErrorThrowing { error in throw PlaybackFailure.player("MPD is not available", error) }
    }

    func state() -> EventLoopFuture<PlaybackState> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { [musicDirectory] in $0.state(musicDirectory: musicDirectory) }
                .map { $0.stating(Self.timing) }
                .flatMapErrorThrowing { error in throw PlaybackFailure.player("MPD", error) }
        }
    }

    /// What MPD is to `add` for `uri`: a URL with a scheme other than file as it is, a path
    /// relative to the music directory. Anything else it cannot open.
    func mpdPath(_ uri: String) throws(PlaybackFailure) -> String {
        // A stream URL, or a path already relative to the music directory, goes as it is.
        guard let path = try PlaybackService.localPath(uri) else { return uri }
        guard let musicDirectory else {
            throw .cannotOpen("MPD takes files under its music directory, and this app names none (music_directory)")
        }
        let folder = musicDirectory.hasSuffix("/") ? musicDirectory : musicDirectory + "/"
        guard path.hasPrefix(folder) else { throw .cannotOpen("\(path) is not under MPD's music directory \(musicDirectory)") }
        return String(path.dropFirst(folder.count))
    }

    func play(_ request: PlaybackCommand.PlayRequest) -> EventLoopFuture<PlaybackProof> {
        let paths: [String], local: [Bool]
        do {
            paths = try request.queue.map(mpdPath)
            local = try request.queue.map { try PlaybackService.localPath($0) != nil }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return eventLoop.flatSubmit { [self] in
            connect().flatMap { mpd in
                self.volume(for: request, on: mpd).flatMap {
                    self.add(paths, local: local, uri: request.uri, on: mpd).flatMapError { error in
                        if error is PlaybackFailure { return self.eventLoop.makeFailedFuture(error) }
                        guard case MPDError.failed(_, _, let message) = error else {
                            return self.eventLoop.makeFailedFuture(PlaybackFailure.player("MPD", error))
                        }
                        return self.eventLoop.makeFailedFuture(PlaybackFailure.cannotOpen("MPD cannot open \(request.uri): \(message)"))
                    }
                }
                .flatMap { added in
                    guard let id = added[request.index]["Id"] else {
                        return self.eventLoop.makeFailedFuture(PlaybackFailure.player("MPD added \(request.uri) without an id"))
                    }
                    let start = String(format: "%.3f", request.position)
                    var commands = [mpd.command("seekid \(id) \(start)")]
                    if request.paused { commands.append(mpd.command("pause 1")) }
                    return EventLoopFuture.andAllSucceed(commands, on: self.eventLoop)
                        .flatMapErrorThrowing { error in throw PlaybackFailure.player("MPD would not start \(request.uri) at \(start)", error) }
                        .flatMap { self.prove(id: id, request: request, on: mpd) }
                        .map { $0.stating(Self.timing) }
                }
            }
        }
    }

    /// Sets the volume the request asks for, or 0 when it asks to play muted (keeping the
    /// volume to give back); a mixer-less MPD plays at its own volume.
    private func volume(for request: PlaybackCommand.PlayRequest, on mpd: MPDConnection) -> EventLoopFuture<Void> {
        if let volume = request.volume { unmutedVolume = Int(volume.rounded()) }
        guard request.muted || request.volume != nil else { return eventLoop.makeSucceededVoidFuture() }
        let before = unmutedVolume.map { eventLoop.makeSucceededFuture($0) }
            ?? mpd.command("status").map { Int($0["volume"] ?? "") ?? 100 }
        return before.flatMap { volume in
            if request.muted { self.unmutedVolume = volume }
            return mpd.command("setvol \(request.muted ? 0 : volume)").map { _ in }
        }.recover { [logger] error in
            logger.notice("MPD did not take the volume", metadata: ["reason": "\(error)"])
        }
    }

    /// The proof that MPD plays entry `id` from where it was asked: its status names that
    /// song, and (unless paused) two readings `settle` apart advance at about real speed. MPD
    /// skips a start past the end to the next song, which then is not `id`.
    private func prove(id: String, request: PlaybackCommand.PlayRequest, on mpd: MPDConnection) -> EventLoopFuture<PlaybackProof> {
        reading(id: id, request: request, on: mpd).flatMap { first in
            guard !request.paused else {
                return self.eventLoop.makeSucceededFuture(PlaybackProof(position: first.seconds, at: first.at, rate: nil))
            }
            return self.eventLoop.flatScheduleTask(in: self.settle) {
                self.reading(id: id, request: request, on: mpd).flatMapResult { second in
                    PositionReading.proof(from: first, to: second, of: request.uri)
                }
            }.futureResult
        }
    }

    private func reading(id: String, request: PlaybackCommand.PlayRequest, on mpd: MPDConnection) -> EventLoopFuture<PositionReading> {
        let asked = Date()
        return mpd.command("status")
            .flatMapErrorThrowing { error in throw PlaybackFailure.player("MPD did not say where it plays", error) }
            .flatMapThrowing { status in
                let answered = Date()
                let expected = request.paused ? "pause" : "play"
                guard status["songid"] == id, status["state"] == expected else {
                    throw PlaybackFailure.didNotPlay(
                        "MPD plays nothing of \(request.uri) from \(request.position) s (state \(status["state"] ?? "?"), song \(status["songid"] ?? "none"))")
                }
                guard let elapsed = status["elapsed"].flatMap(Double.init) else {
                    throw PlaybackFailure.didNotPlay("MPD has no position for \(request.uri)")
                }
                return PositionReading(seconds: elapsed, asked: asked, answered: answered)
            }
    }

    func control(_ command: PlaybackCommand) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            let line: String
            switch command {
            case .pause: line = "pause 1"
            case .resume: line = "pause 0"
            case .stop: line = "stop"
            case .seek(let position): line = "seekcur \(String(format: "%.3f", position))"
            case .seekBy(let offset): line = "seekcur \(String(format: "%+.3f", offset))"
            case .volume(let level):
                unmutedVolume = Int(level.rounded())
                line = "setvol \(Int(level.rounded()))"
            case .mute(let muted): line = "setvol \(muted ? 0 : unmutedVolume ?? 100)"
            case .state, .play, .watch, .unwatch, .share: return eventLoop.makeFailedFuture(PlaybackFailure.badRequest("not a control command"))
            }
            return connect().flatMap { $0.command(line) }.map { _ in }
                .flatMapErrorThrowing { error in throw PlaybackFailure.player("MPD", error) }
        }
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.submit { [self] in
            stopping = true
            idleConnection?.close()
            connection?.close()
            connection = nil
        }
    }
}
