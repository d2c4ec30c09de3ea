import BatonCore
import BatonNet
import Foundation
import NIOConcurrencyHelpers
import NIOCore

extension MPRISPlayer {
    /// Plays the request's entry (MPRIS has no queue: the others are left out) from its
    /// position, answered once the player proved it: `OpenUri` (a path as a `file://` URL;
    /// skipped when that file is loaded and playing or paused), then, once the player shows
    /// the new track (a `SetPosition` before that is ignored), `Pause`, `SetPosition` to the
    /// position (sent again until the player is there), and unless asked to stay paused,
    /// `Play` and two readings ``proofSpan`` apart advancing at about real speed. All within
    /// ``playTimeout``.
    func play(_ request: PlaybackCommand.PlayRequest) -> EventLoopFuture<PlaybackProof> {
        let uri: String
        do {
            uri = try Self.openURI(request.uri)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return eventLoop.flatSubmit { [self] in
            let deadline = NIODeadline.now() + playTimeout
            // The pause, seek and resume this takes are no changes to tell: the new track is.
            changes.starting = true
            return connect().flatMap { [self] in identified(on: $0) }.flatMap { [self] connection in
                volume(for: request, on: connection)
                    .flatMap { [self] in load(uri, on: connection, deadline: deadline) }
                    .flatMap { [self] track in start(track, request, uri: uri, on: connection, deadline: deadline) }
            }
            .map { [self] proof in
                changes.starting = false
                return proof.stating(timing)
            }
            .flatMapErrorThrowing { [self] error in
                changes.starting = false
                throw failure(error, "playing \(request.uri)")
            }
        }
    }

    /// What `OpenUri` is given for `uri`: a path as a `file://` URL, any other URI as it is.
    static func openURI(_ uri: String) throws(PlaybackFailure) -> String {
        guard let path = try PlaybackService.localPath(uri) else { return uri }
        return URL(fileURLWithPath: path).absoluteString
    }

    /// Whether the player's `url` names the media `uri` does (a file by its path, whatever
    /// its escaping).
    static func sameMedia(_ url: String?, _ uri: String) -> Bool {
        guard let url else { return false }
        func normalized(_ text: String) -> String {
            if let path = try? PlaybackService.localPath(text) { return (path as NSString).standardizingPath }
            return text.removingPercentEncoding ?? text
        }
        return normalized(url) == normalized(uri)
    }

    /// Has the player load `uri`, answered with its properties once it shows that track loaded.
    private func load(_ uri: String, on connection: MPRISConnection, deadline: NIODeadline) -> EventLoopFuture<MPRISProperties> {
        reading(on: connection).flatMap { [self] before in
            let now = before.properties
            // Loaded already: seek within it. mpv-mpris may say Stopped while it plays (after an
            // OpenUri from idle), so a track with a position counts too; VLC stopped at the end
            // keeps its track at 0, and needs it opened again.
            let playable = now.status == "Playing" || now.status == "Paused" || (now.position ?? 0) > 0
            if Self.sameMedia(now.url, uri), now.trackID != nil, playable {
                return eventLoop.makeSucceededFuture(now)
            }
            let watch = LoadWatch(before: now, uri: uri, busName: busName)
            // mpv shows a file it cannot open for a moment only: its Metadata signal says so
            // even when no reading catches it.
            let stopWatching = watchSignals { signal in
                guard case .changed(let values, _) = signal, let metadata = values["Metadata"]?.dictionaryValue,
                      Self.sameMedia(metadata["xesam:url"]?.stringValue, uri) else { return }
                watch.showed()
            }
            let loaded = connection.call(MPRISConnection.playerInterface, "OpenUri", [.string(uri)])
                .flatMapErrorThrowing { [busName] error in
                    // The player refused the URI itself (VLC does for what it cannot open).
                    if case MPRISError.failed(_, let message) = error { throw PlaybackFailure.cannotOpen("\(busName) cannot open \(uri): \(message)") }
                    throw error
                }
                .flatMap { [self] _ in
                    until(deadline, on: connection, timedOut: { [busName, playTimeout] in
                        watch.sawURL
                            ? .cannotOpen("\(busName) did not load \(uri) within \(playTimeout.words)")
                            : .player("\(busName) did not take \(uri) within \(playTimeout.words)")
                    }) { [self] in
                        reading(on: connection).flatMapThrowing { try watch.check($0.properties) }
                    }
                }
            loaded.whenComplete { _ in stopWatching() }
            return loaded
        }
    }

    /// Starts the loaded `track` from the request's position: paused, seeked, then playing and
    /// proved, or proved holding there.
    private func start(
        _ track: MPRISProperties, _ request: PlaybackCommand.PlayRequest, uri: String, on connection: MPRISConnection, deadline: NIODeadline
    ) -> EventLoopFuture<PlaybackProof> {
        if let length = track.length, request.position >= length {
            return eventLoop.makeFailedFuture(PlaybackFailure.didNotPlay(
                "\(request.uri) is \(Self.seconds(length)) s long: nothing plays from \(Self.seconds(request.position)) s"))
        }
        guard let trackID = track.trackID else {
            return eventLoop.makeFailedFuture(PlaybackFailure.player("\(busName) named no track for \(uri)"))
        }
        let position = request.position
        return connection.call(MPRISConnection.playerInterface, "Pause").flatMap { [self] _ in
            seek(to: position, on: connection, deadline: deadline, resend: true) {
                connection.call(MPRISConnection.playerInterface, "SetPosition", [.objectPath(trackID), .int64(Self.microseconds(position))])
            }
        }
        .flatMap { [self] in
            guard !request.paused else {
                return settled(on: connection, deadline: deadline, "paused at \(Self.seconds(position)) s in \(uri)") { properties in
                    Self.sameMedia(properties.url, uri) && properties.status == "Paused"
                }
                .map { PlaybackProof(position: $0.position.seconds, at: $0.at, rate: nil) }
            }
            return connection.call(MPRISConnection.playerInterface, "Play").flatMap { [self] _ in prove(uri, on: connection, deadline: deadline) }
        }
    }

    /// The proof that `uri` plays: the player says it plays it, and two readings ``proofSpan``
    /// apart advance at about real speed (allowing for the player's granularity).
    private func prove(_ uri: String, on connection: MPRISConnection, deadline: NIODeadline) -> EventLoopFuture<PlaybackProof> {
        let playing: @Sendable (MPRISProperties) -> Bool = { Self.sameMedia($0.url, uri) && $0.status == "Playing" }
        return settled(on: connection, deadline: deadline, "playing \(uri)", playing).flatMap { [self] first in
            eventLoop.flatScheduleTask(in: proofSpan) { [self] in
                reading(on: connection).flatMapThrowing { [self] second in
                    guard playing(second.properties) else {
                        throw PlaybackFailure.didNotPlay(
                            "\(busName) stopped playing \(uri) (it says \(second.properties.status ?? "nothing") of \(second.properties.url ?? "no track"))")
                    }
                    return try Self.proof(from: first.position, to: second.position, of: uri, granularity: timing.granularity).get()
                }
            }.futureResult
        }
    }

    /// Like ``PositionReading/proof(from:to:of:)``, allowing for positions that move in steps
    /// of `granularity` seconds: the position must have moved forward.
    static func proof(from first: PositionReading, to second: PositionReading, of uri: String, granularity: Double) -> Result<PlaybackProof, PlaybackFailure> {
        let moved = second.seconds - first.seconds
        let least = second.asked.timeIntervalSince(first.answered), most = second.answered.timeIntervalSince(first.asked)
        let slack = max(0.05, granularity)
        guard moved > 0, moved >= 0.8 * least - slack, moved <= 1.2 * most + slack else {
            return .failure(.didNotPlay("\(uri) moved \(String(format: "%.3f", moved)) s in \(String(format: "%.3f", least))–\(String(format: "%.3f", most)) s"))
        }
        return .success(PlaybackProof(position: first.seconds, at: first.at, rate: moved / second.at.timeIntervalSince(first.at)))
    }

    /// The first reading that `holds`, by `deadline`; else ``PlaybackFailure/didNotPlay(_:)``
    /// saying what it was not (`what`) and what it said last.
    func settled(
        on connection: MPRISConnection, deadline: NIODeadline, _ what: String, _ holds: @escaping @Sendable (MPRISProperties) -> Bool
    ) -> EventLoopFuture<MPRISReading> {
        let last = NIOLockedValueBox<MPRISProperties?>(nil)
        return until(deadline, on: connection, timedOut: { [busName] in
            let said = last.withLockedValue { $0 }
            return .didNotPlay("\(busName) was not \(what): it says \(said?.status ?? "nothing") of \(said?.url ?? "no track")")
        }) { [self] in
            reading(on: connection).map { reading in
                last.withLockedValue { $0 = reading.properties }
                return holds(reading.properties) ? reading : nil
            }
        }
    }

    /// Sends a seek (`send`), answered once the player plays (or holds) from `target`: its
    /// `Seeked` there, or its position there (and no further on than the time since allows).
    /// mpv-mpris sends `Seeked` once mpv plays from where it landed, and until then says the
    /// position asked for (a paused mpv lands up to 0.2 s earlier): from mpv only `Seeked`
    /// counts, for 2 s. VLC's position is where it goes at once, its `Seeked` late. With
    /// `resend`, the seek goes again each second until then (a player ignores one while it
    /// loads). Fails at `deadline` with ``PlaybackFailure/didNotPlay(_:)``.
    func seek(
        to target: Double, on connection: MPRISConnection, deadline: NIODeadline, resend: Bool,
        _ send: @escaping @Sendable () -> EventLoopFuture<[DBusValue]>
    ) -> EventLoopFuture<Void> {
        let wait = SeekWait(target: target, tolerance: 0.25 + timing.granularity)
        let stopWatching = watchSignals { signal in
            if case .seeked(let microseconds) = signal { wait.seeked(Double(microseconds) / 1e6) }
        }
        let sendOnce: @Sendable () -> EventLoopFuture<Void> = { [self] in
            wait.sent = .now()
            return send().map { _ in }.flatMapError { [self] error in
                // A player that refuses while it loads gets the seek again.
                if resend, case MPRISError.failed = error { return eventLoop.makeSucceededVoidFuture() }
                return eventLoop.makeFailedFuture(error)
            }
        }
        let signalsLanding = identity == "mpv"
        let started = NIODeadline.now()
        let done = sendOnce().flatMap { [self] in
            until(deadline, on: connection, timedOut: { [busName] in
                .didNotPlay("\(busName) did not play from \(Self.seconds(target)) s: it is at \(wait.last.map { Self.seconds($0) } ?? "no position") s")
            }) { [self] in
                if wait.heard { return eventLoop.makeSucceededFuture(()) }
                return connection.property("Position").flatMap { [self] value in
                    let position = value.int64Value.map { Double($0) / 1e6 }
                    // Seeked may have come while the position was read.
                    if wait.heard { return eventLoop.makeSucceededFuture(()) }
                    let trusted = !signalsLanding || NIODeadline.now() - started > .seconds(2)
                    if let position, wait.landed(position), trusted { return eventLoop.makeSucceededFuture(()) }
                    guard resend, NIODeadline.now() - wait.sent > .seconds(1) else { return eventLoop.makeSucceededFuture(nil) }
                    return sendOnce().map { nil }
                }
            }
        }
        done.whenComplete { _ in stopWatching() }
        return done
    }

    func control(_ command: PlaybackCommand) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { [self] connection in
                let deadline = NIODeadline.now() + settleTimeout
                switch command {
                case .pause: return transport("Pause", to: "Paused", on: connection, deadline: deadline)
                case .resume: return transport("Play", to: "Playing", on: connection, deadline: deadline)
                case .stop:
                    changes.stopAsked = true
                    return transport("Stop", to: "Stopped", on: connection, deadline: deadline)
                case .seek(let position):
                    return loaded(on: connection).flatMap { [self] track in
                        guard let trackID = track.trackID else {
                            return eventLoop.makeFailedFuture(PlaybackFailure.player("\(busName) named no track to seek in"))
                        }
                        return seek(to: position, on: connection, deadline: deadline, resend: true) {
                            connection.call(MPRISConnection.playerInterface, "SetPosition", [.objectPath(trackID), .int64(Self.microseconds(position))])
                        }
                    }
                case .seekBy(let offset):
                    return loaded(on: connection).flatMap { [self] track in
                        var target = max(0, (track.position ?? 0) + offset)
                        if let length = track.length { target = min(target, length) }
                        return seek(to: target, on: connection, deadline: deadline, resend: false) {
                            connection.call(MPRISConnection.playerInterface, "Seek", [.int64(Self.microseconds(offset))])
                        }
                    }
                case .volume(let level):
                    unmutedVolume = level / 100
                    muted = false
                    return setVolume(level / 100, on: connection)
                case .mute(let mute):
                    return self.mute(mute, on: connection)
                case .state, .play, .watch, .unwatch, .share:
                    return eventLoop.makeFailedFuture(PlaybackFailure.badRequest("not a control command"))
                }
            }
            .flatMapErrorThrowing { [self] error in throw failure(error, "\(command)") }
        }
    }

    /// The player's properties, if it has a track loaded; else a failure saying it has none.
    private func loaded(on connection: MPRISConnection) -> EventLoopFuture<MPRISProperties> {
        reading(on: connection).flatMapThrowing { [busName] reading in
            guard reading.properties.url != nil, reading.properties.status != "Stopped" || reading.properties.position != nil else {
                throw PlaybackFailure.player("\(busName) has nothing loaded to seek in")
            }
            return reading.properties
        }
    }

    /// Calls `member` (`Pause`, `Play`, `Stop`), answered once the player says `status`.
    /// mpv-mpris says `Stopped` while it plays after an `OpenUri` from idle, until it is paused
    /// once: `Play` then changes nothing it could say, and is taken as done.
    private func transport(_ member: String, to status: String, on connection: MPRISConnection, deadline: NIODeadline) -> EventLoopFuture<Void> {
        connection.call(MPRISConnection.playerInterface, member).flatMap { [self] _ in
            settled(on: connection, deadline: deadline, status.lowercased()) { properties in
                properties.status == status || (status == "Playing" && properties.status == "Stopped" && properties.url != nil)
            }
            .map { _ in }
        }
    }

    static func microseconds(_ seconds: Double) -> Int64 {
        Int64((seconds * 1e6).rounded())
    }

    static func seconds(_ value: Double) -> String {
        String(format: "%.3f", value)
    }

    /// Runs `step` until it gives a value: again ~40 ms after each nil, or sooner when the
    /// player signals something; failed with `timedOut()` at `deadline` or with `step`'s error.
    func until<T: Sendable>(
        _ deadline: NIODeadline, on connection: MPRISConnection, timedOut: @escaping @Sendable () -> PlaybackFailure,
        _ step: @escaping @Sendable () -> EventLoopFuture<T?>
    ) -> EventLoopFuture<T> {
        let retry = Retry(eventLoop: eventLoop, deadline: deadline, timedOut: timedOut, step: step)
        retry.stopWatching = watchSignals { _ in retry.attempt() }
        retry.begin()
        return retry.promise.futureResult
    }
}

/// What a load has seen since `OpenUri`: whether the player showed the URI, and since when it
/// has said `Stopped`. Confined to the player's loop.
private final class LoadWatch: @unchecked Sendable {
    let before: MPRISProperties
    let uri: String
    let busName: String
    private(set) var sawURL = false
    private let opened = NIODeadline.now()
    private var seenSince: NIODeadline?
    private var stoppedSince: NIODeadline?

    init(before: MPRISProperties, uri: String, busName: String) {
        self.before = before
        self.uri = uri
        self.busName = busName
    }

    /// The player said it has the URI (a signal), whether or not a reading shows it.
    func showed() {
        sawURL = true
    }

    /// The properties if they show the new track loaded; nil if not yet; throws
    /// ``PlaybackFailure/cannotOpen(_:)`` once the player dropped the URI (mpv goes idle) or
    /// has said `Stopped` without loading it for 2 s (VLC).
    func check(_ now: MPRISProperties) throws -> MPRISProperties? {
        guard MPRISPlayer.sameMedia(now.url, uri) else {
            if sawURL { throw PlaybackFailure.cannotOpen("\(busName) cannot open \(uri): it dropped it") }
            return nil
        }
        // The same file was loaded before (mpv-mpris keeps the track id): the old one plays on
        // until the new one starts from 0 (waited for a second at most).
        let time = NIODeadline.now()
        if !sawURL, MPRISPlayer.sameMedia(before.url, uri), now.trackID == before.trackID,
           let was = before.position, was > 0.5, let position = now.position, position >= was, time - opened < .seconds(1) {
            return nil
        }
        sawURL = true
        let seen = seenSince ?? time
        seenSince = seen
        if let trackID = now.trackID, !trackID.hasSuffix("/NoTrack"), trackID != "/noplaylist" {
            if now.length != nil { return now }
            // A stream has no length: playing (or paused) for a second is loaded.
            if now.status == "Playing" || now.status == "Paused", time - seen > .seconds(1) { return now }
        }
        if now.status == "Stopped" {
            let stopped = stoppedSince ?? time
            stoppedSince = stopped
            if time - stopped > .seconds(2) { throw PlaybackFailure.cannotOpen("\(busName) cannot open \(uri): it stopped without loading it") }
        } else {
            stoppedSince = nil
        }
        return nil
    }
}

/// A seek under way: its target, when it was (last) sent, and whether the player was heard
/// there. Confined to the player's loop.
private final class SeekWait: @unchecked Sendable {
    let target: Double
    let tolerance: Double
    var sent = NIODeadline.now()
    private let first = Date()
    private(set) var heard = false
    private(set) var last: Double?

    init(target: Double, tolerance: Double) {
        self.target = target
        self.tolerance = tolerance
    }

    /// Whether `position` is where the seek lands: from the target (less the tolerance) to as
    /// far past it as the time since the first send allows.
    func landed(_ position: Double) -> Bool {
        last = position
        let since = Date().timeIntervalSince(first)
        return position >= target - tolerance && position <= target + tolerance + 1.2 * since
    }

    func seeked(_ position: Double) {
        if landed(position) { heard = true }
    }
}

/// One ``MPRISPlayer/until(_:on:timedOut:_:)``. Confined to the player's loop.
private final class Retry<T: Sendable>: @unchecked Sendable {
    let eventLoop: any EventLoop
    let deadline: NIODeadline
    let timedOut: @Sendable () -> PlaybackFailure
    let step: @Sendable () -> EventLoopFuture<T?>
    let promise: EventLoopPromise<T>
    var stopWatching: (@Sendable () -> Void)?
    private var running = false
    private var again = false
    private var done = false
    private var next: Scheduled<Void>?
    private var timer: Scheduled<Void>?

    init(eventLoop: any EventLoop, deadline: NIODeadline, timedOut: @escaping @Sendable () -> PlaybackFailure, step: @escaping @Sendable () -> EventLoopFuture<T?>) {
        self.eventLoop = eventLoop
        self.deadline = deadline
        self.timedOut = timedOut
        self.step = step
        promise = eventLoop.makePromise(of: T.self)
    }

    func begin() {
        timer = eventLoop.scheduleTask(deadline: deadline) { [self] in finish(.failure(timedOut())) }
        attempt()
    }

    /// Runs the step now (or once the one running ends).
    func attempt() {
        guard !done else { return }
        next?.cancel()
        next = nil
        guard !running else {
            again = true
            return
        }
        running = true
        step().whenComplete { [self] result in
            running = false
            guard !done else { return }
            switch result {
            case .failure(let error): finish(.failure(error))
            case .success(let value?): finish(.success(value))
            case .success(nil):
                if again {
                    again = false
                    attempt()
                } else {
                    next = eventLoop.scheduleTask(in: .milliseconds(40)) { [self] in attempt() }
                }
            }
        }
    }

    private func finish(_ result: Result<T, any Error>) {
        guard !done else { return }
        done = true
        next?.cancel()
        timer?.cancel()
        stopWatching?()
        stopWatching = nil
        promise.completeWith(result)
    }
}
