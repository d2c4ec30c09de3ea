import BatonCore
import BatonNet
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// An app's mpv, over its JSON IPC: attached to when an mpv already listens on the socket
/// (one that outlived an agent killed before it could stop it, say), else started by the agent
/// (`mpv --idle`, the app's arguments added). One the agent started is restarted when it
/// dies, with a growing pause between tries, and stopped at shutdown. Confined to its loop.
final class MPVPlayer: Player, @unchecked Sendable {
    let eventLoop: any EventLoop
    let socket: String
    let arguments: [String]
    let executable: String
    let logger: Logger
    /// The deadline of each call to mpv.
    var callTimeout: TimeAmount = .seconds(2)
    private var connection: MPVConnection?
    private var connecting: EventLoopFuture<MPVConnection>?
    /// The mpv the agent started, if it did.
    private var process: MPVProcess?
    private var stopping = false
    /// How long to wait before the next restart.
    private let retry = RetryPause()
    /// Who hears mpv's changes (``watch(_:)``), across its connections.
    private let watchers = Watchers<PlayerChange>()

    /// mpv's `time-pos` moves in steps of 50–100 ms with a null output; a seek answers once
    /// mpv plays from where it landed (4–34 ms from the command).
    static let timing = PlayerTiming(granularity: 0.1, seekLatency: 0.01)

    init(socket: String, arguments: [String], executable: String = "mpv", on eventLoop: any EventLoop, logger: Logger) {
        self.socket = socket
        self.arguments = arguments
        self.executable = executable
        self.eventLoop = eventLoop
        self.logger = logger
    }

    func start() {
        eventLoop.execute { [self] in
            connect().whenFailure { [self] error in
                // It did not start, or died before it listened: try again, ever more slowly.
                logger.warning("mpv is not available yet", metadata: ["socket": "\(socket)", "reason": "\(ErrorWords.of(error))"])
                restart()
            }
        }
    }

    /// The connection to mpv: the one open, else attached or started now.
    private func connect() -> EventLoopFuture<MPVConnection> {
        eventLoop.preconditionInEventLoop()
        if let connection, connection.isOpen { return eventLoop.makeSucceededFuture(connection) }
        if let connecting { return connecting }
        guard !stopping else { return eventLoop.makeFailedFuture(PlaybackFailure.player("the agent is stopping")) }
        let made = MPVConnection.connect(path: socket, on: eventLoop, timeout: .milliseconds(500))
            .map { [logger, socket] connection in
                logger.info("attached to the mpv listening on \(socket)")
                return connection
            }
            .flatMapError { [self] _ in
                // Nothing listens there (or an mpv of ours died): start one.
                process?.stop()
                process = nil
                return MPVProcess.start(executable: executable, socket: socket, arguments: arguments, on: eventLoop).map { [self] started in
                    process = started.0
                    logger.info("started mpv", metadata: ["pid": "\(started.0.pid)", "socket": "\(socket)"])
                    return started.1
                }
            }
        connecting = made
        made.whenComplete { [self] result in
            connecting = nil
            guard case .success(let opened) = result else { return }
            opened.callTimeout = callTimeout
            connection = opened
            retry.connected()
            opened.onClosed = { [weak self, weak opened] reason in
                guard let self, let opened else { return }
                lost(opened, reason)
            }
            observe(opened)
            if stopping { opened.close() }
        }
        return made.flatMapErrorThrowing { error in throw PlaybackFailure.player("mpv is not available", error) }
    }

    /// Hears `connection`'s events for the watchers: its file events, and the properties
    /// observed for them.
    private func observe(_ connection: MPVConnection) {
        var tracker = MPVChangeTracker()
        _ = connection.watchEvents { [watchers] event in
            if let change = tracker.take(event) { watchers.tell(change) }
        }
        for (id, name) in [(MPVChangeTracker.pauseObservation, "pause"), (MPVChangeTracker.idleObservation, "idle-active")] {
            connection.command(.array([.string("observe_property"), .int(id), .string(name)])).whenFailure { [logger] error in
                logger.notice("mpv does not report \(name) changes", metadata: ["reason": "\(error)"])
            }
        }
    }

    func watch(_ handler: @escaping (PlayerChange) -> Void) -> () -> Void {
        eventLoop.preconditionInEventLoop()
        return watchers.add(handler)
    }

    /// mpv went away: connect again (starting a new one) after a pause, unless stopping.
    private func lost(_ lost: MPVConnection, _ reason: MPVError) {
        guard connection === lost else { return }
        connection = nil
        // An mpv that keeps failing at once (or a socket that answers garbage) is retried ever
        // more slowly.
        let status = process?.reap()
        logger.warning("lost mpv; starting it again", metadata: [
            // Its process may have exited, or still run with a socket that failed: say which.
            "reason": "\(reason)", "process": "\(status.map { "exited with status \($0)" } ?? "still running")",
        ])
        restart()
    }

    /// Connects again after a pause that grows with each failure, until mpv answers.
    private func restart() {
        retry.retry(on: eventLoop, while: { [self] in !stopping && connection == nil }, { [self] in connect() }) { [self] error in
            logger.error("cannot start mpv again", metadata: ["reason": "\(error)", "next try in": "\(retry.following.words)"])
        }
    }

    func state() -> EventLoopFuture<PlaybackState> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { $0.state() }.map { $0.stating(Self.timing) }.flatMapErrorThrowing { error in throw PlaybackFailure.player("mpv", error) }
        }
    }

    func play(_ request: PlaybackCommand.PlayRequest) -> EventLoopFuture<PlaybackProof> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { mpv in
                var setup = [mpv.command(.array([.string("set_property"), .string("mute"), .bool(request.muted)]))]
                if let volume = request.volume { setup.append(mpv.command(.array([.string("set_property"), .string("volume"), .double(volume)]))) }
                return EventLoopFuture.andAllSucceed(setup, on: self.eventLoop)
                    .flatMapErrorThrowing { error in throw PlaybackFailure.player("mpv refused the volume", error) }
                    .flatMap { mpv.play(request.uri, from: request.position, paused: request.paused) }
                    .flatMap { proof in self.queue(request, on: mpv).map { proof.stating(Self.timing) } }
            }
        }
    }

    /// Puts the rest of the request's queue around the entry that plays: appended, and those
    /// before it moved to the front.
    private func queue(_ request: PlaybackCommand.PlayRequest, on mpv: MPVConnection) -> EventLoopFuture<Void> {
        guard request.queue.count > 1 else { return eventLoop.makeSucceededVoidFuture() }
        var commands: [EventLoopFuture<JSON>] = []
        let after = request.queue[(request.index + 1)...], before = request.queue[..<request.index]
        for uri in after + before { commands.append(mpv.command(.array([.string("loadfile"), .string(uri), .string("append")]))) }
        for k in 0..<before.count {
            commands.append(mpv.command(.array([.string("playlist-move"), .int(Int64(request.queue.count - before.count + k)), .int(Int64(k))])))
        }
        return EventLoopFuture.andAllSucceed(commands, on: eventLoop)
            .flatMapErrorThrowing { error in throw PlaybackFailure.player("mpv did not take the queue", error) }
    }

    func control(_ command: PlaybackCommand) -> EventLoopFuture<Void> {
        let arguments: JSON
        switch command {
        case .pause: arguments = .array([.string("set_property"), .string("pause"), .bool(true)])
        case .resume: arguments = .array([.string("set_property"), .string("pause"), .bool(false)])
        case .stop: arguments = .array([.string("stop")])
        case .seek(let position): arguments = .array([.string("seek"), .double(position), .string("absolute+exact")])
        case .seekBy(let offset): arguments = .array([.string("seek"), .double(offset), .string("relative+exact")])
        case .volume(let level): arguments = .array([.string("set_property"), .string("volume"), .double(level)])
        case .mute(let muted): arguments = .array([.string("set_property"), .string("mute"), .bool(muted)])
        case .state, .play, .watch, .unwatch, .share: return eventLoop.makeFailedFuture(PlaybackFailure.badRequest("not a control command"))
        }
        // A seek is answered once mpv plays from where it landed, so the state that answers it is true.
        let seeks = if case .seek = command { true } else if case .seekBy = command { true } else { false }
        return eventLoop.flatSubmit { [self] in
            connect().flatMap { seeks ? $0.seek(arguments) : $0.command(arguments).map { _ in } }
                .flatMapErrorThrowing { error in throw PlaybackFailure.player("mpv", error) }
        }
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            stopping = true
            // An mpv being started now is stopped too, once it is.
            let pending = connecting.map { $0.map { _ in }.recover { _ in } } ?? eventLoop.makeSucceededVoidFuture()
            return pending.flatMap { [self] in
                connection?.close()
                connection = nil
                guard let process else { return eventLoop.makeSucceededVoidFuture() }
                self.process = nil
                logger.info("stopping mpv", metadata: ["pid": "\(process.pid)"])
                return process.stop()
            }
        }
    }
}
