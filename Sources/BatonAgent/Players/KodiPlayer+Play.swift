import BatonCore
import Foundation
import NIOCore

extension KodiPlayer {
    /// Plays as asked, answered with the proof once Kodi plays there (see ``start(_:paths:on:)``).
    func play(_ request: PlaybackCommand.PlayRequest) -> EventLoopFuture<PlaybackProof> {
        let paths: [String]
        do {
            paths = try request.queue.map { try PlaybackService.localPath($0) ?? $0 }
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return eventLoop.flatSubmit { [self] in
            connect().flatMap { kodi in
                let wasLoaded = self.changes.loaded
                self.busy += 1
                return self.start(request, paths: paths, on: kodi)
                    .always { _ in self.busy -= 1 }
                    .map { proof in
                        self.tell(wasLoaded ? .trackChanged : .started)
                        return proof.stating(self.timing)
                    }
            }
            .flatMapErrorThrowing { error in throw PlaybackFailure.player("Kodi", error) }
        }
    }

    /// Opens the request's entry (the queue as Kodi's audio playlist when there are more) to
    /// resume at its position, ``startLead`` later (Kodi begins that much before), with the
    /// volume and mute asked; waits for `Player.OnAVStart`; measures where it started (its
    /// readings against the asked position advanced from that instant), learns the lead from
    /// it and, when still further off than ``precision``, seeks to where it should be once the
    /// seek's stall is over (``correctiveSeeks`` times at most). A paused request plays from
    /// ``leadIn`` before, muted (unmuted after unless it asks to be muted, also when it fails),
    /// and is paused at its position (``pause(at:player:on:tries:)``). The proof is two
    /// readings ``settle`` apart that advance at about real speed, or for a paused request
    /// where it holds.
    ///
    /// Kodi refuses a file it cannot find (`Invalid params`), and stops at once one it cannot
    /// play (`Player.OnStop` with `end` true after its start): both are
    /// ``PlaybackFailure/cannotOpen(_:)``.
    private func start(_ request: PlaybackCommand.PlayRequest, paths: [String], on kodi: KodiConnection) -> EventLoopFuture<PlaybackProof> {
        let uri = request.uri
        let startAt = request.paused ? max(0, request.position - Self.leadIn) : request.position
        let watch = StartWatch(promise: eventLoop.makePromise(of: Date.self))
        let stop = kodi.watchNotifications { notification in
            switch notification.method {
            case "Player.OnAVStart" where watch.opened && watch.startedAt == nil:
                let now = Date()
                watch.startedAt = now
                watch.finish(.success(now))
            case "Player.OnStop" where watch.startedAt != nil:
                // The item stopped after it started: Kodi could not play it (the previous
                // item's stop comes before the new one's start).
                watch.stopped = true
            default: break
            }
        }
        let timer = eventLoop.scheduleTask(in: startTimeout) { [startTimeout] () -> Void in
            watch.finish(.failure(PlaybackFailure.didNotPlay("Kodi did not start \(uri) within \(startTimeout.words)")))
        }
        var setup = [kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(request.muted || request.paused))]))]
        if let volume = request.volume {
            setup.append(kodi.call("Application.SetVolume", .object([JSON.Member("volume", .int(Int64(volume.rounded())))])))
        }
        let lead = startLead
        let resume = JSON.Member("options", .object([JSON.Member("resume", KodiTime.json(startAt + lead))]))
        let opened = EventLoopFuture.andAllSucceed(setup, on: eventLoop)
            .flatMapErrorThrowing { error in throw PlaybackFailure.player("Kodi refused the volume", error) }
            .flatMap { () -> EventLoopFuture<JSON> in
                watch.opened = true
                guard paths.count > 1 else {
                    return kodi.call("Player.Open", .object([JSON.Member("item", .object([JSON.Member("file", .string(paths[0]))])), resume]))
                }
                let playlist = JSON.Member("playlistid", .int(0))
                return kodi.call("Playlist.Clear", .object([playlist]))
                    .flatMap { _ in
                        kodi.call("Playlist.Add", .object([playlist, JSON.Member("item", .array(paths.map { .object([JSON.Member("file", .string($0))]) }))]))
                    }
                    .flatMap { _ in
                        kodi.call("Player.Open", .object([
                            JSON.Member("item", .object([playlist, JSON.Member("position", .int(Int64(request.index)))])), resume,
                        ]))
                    }
            }
            .flatMapErrorThrowing { error -> JSON in
                if case KodiError.failed(_, let message) = error {
                    throw PlaybackFailure.cannotOpen("Kodi cannot open \(uri): \(message) (is it there, where Kodi runs?)")
                }
                throw PlaybackFailure.player("Kodi did not open \(uri)", error)
            }
        opened.whenFailure { error in watch.finish(.failure(error)) }
        return opened.flatMap { _ in watch.promise.futureResult }
            .always { _ in timer.cancel() }
            .flatMap { startedAt in
                // Its first readings jump about; and a file it cannot play stops within them.
                self.eventLoop.flatScheduleTask(in: self.settle) {
                    self.playing(uri, watch: watch, on: kodi)
                }.futureResult.map { ($0, startedAt) }
            }
            .flatMap { id, startedAt in
                self.error(player: id, from: startAt, at: startedAt, on: kodi).flatMap { error in
                    self.startLeads.add(lead - error)
                    self.logger.debug("Kodi started", metadata: [
                        "off by": "\(String(format: "%.3f", error))", "lead now": "\(String(format: "%.3f", self.startLead))",
                    ])
                    if request.paused {
                        return self.pause(at: request.position, player: id, on: kodi).flatMap { held in
                            self.lastStart = KodiStart(position: request.position, at: startedAt, error: held.seconds - request.position)
                            let unmute = request.muted ? self.eventLoop.makeSucceededFuture(JSON.null)
                                : kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(false))]))
                            return unmute.map { _ in PlaybackProof(position: held.seconds, at: held.at, rate: nil) }
                        }
                    }
                    let corrected = self.correct(error, player: id, from: startAt, at: startedAt, on: kodi, seeks: Self.correctiveSeeks)
                    return corrected
                        .flatMap { error in
                            self.lastStart = KodiStart(position: startAt, at: startedAt, error: error)
                            return self.prove(uri, player: id, watch: watch, on: kodi)
                        }
                }
            }
            .always { _ in stop() }
            .flatMapError { error in
                // A paused request muted Kodi to play up to its position: not for ever.
                guard request.paused, !request.muted else { return self.eventLoop.makeFailedFuture(error) }
                return kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(false))]))
                    .flatMapThrowing { _ in throw error }
                    .flatMapErrorThrowing { _ in throw error }
            }
    }

    /// Corrective seeks after a start, at most. Each is aimed past the learned stall, but a
    /// seek's stall differs from the last by up to ±0.1 s (seemingly the phase of its output's
    /// 0.1 s buffer), so about half land further off than ``precision``: such a one is followed
    /// by another (each takes some 0.3 s).
    static let correctiveSeeks = 5

    /// While `error` (how far Kodi is from `position` advanced from `instant`) is over
    /// ``precision``, seeks to where it should be once the seek's stall is over, `seeks` times
    /// at most; answers the error it is left with.
    private func correct(
        _ error: Double, player id: Int64, from position: Double, at instant: Date, on kodi: KodiConnection, seeks: Int
    ) -> EventLoopFuture<Double> {
        guard abs(error) > Self.precision, seeks > 0 else { return eventLoop.makeSucceededFuture(error) }
        let aim = position + Date().timeIntervalSince(instant) + seekStall
        return seekPlaying(to: aim, player: id, on: kodi)
            .flatMap { self.error(player: id, from: position, at: instant, on: kodi) }
            .flatMap { left in
                self.logger.debug("Kodi corrected", metadata: ["off by": "\(String(format: "%.3f", left))"])
                return self.correct(left, player: id, from: position, at: instant, on: kodi, seeks: seeks - 1)
            }
    }

    /// How far Kodi's player `id` is from `position` advanced from `instant`: the middle one of
    /// three readings 30 ms apart (a reading now and then lags or leads by a few tens of ms).
    private func error(player id: Int64, from position: Double, at instant: Date, on kodi: KodiConnection) -> EventLoopFuture<Double> {
        let readings = (0..<3).map { index in
            eventLoop.flatScheduleTask(in: .milliseconds(30 * Int64(index))) { self.position(player: id, on: kodi) }.futureResult
        }
        return EventLoopFuture.whenAllSucceed(readings, on: eventLoop).map { readings in
            readings.map { self.error(of: $0.reading, from: position, at: instant) }.sorted()[1]
        }
    }

    /// How far `reading` is from `position` advanced in real time from `instant` (positive: ahead).
    private func error(of reading: PositionReading, from position: Double, at instant: Date) -> Double {
        reading.seconds - (position + reading.at.timeIntervalSince(instant))
    }

    /// Kodi's active player, once it is known to play `uri` and not to have stopped it.
    private func playing(_ uri: String, watch: StartWatch, on kodi: KodiConnection) -> EventLoopFuture<Int64> {
        activePlayer(on: kodi).flatMapThrowing { id in
            guard let id, !watch.stopped else { throw PlaybackFailure.cannotOpen("Kodi stopped \(uri) as soon as it started: it cannot play it") }
            return id
        }
    }

    /// The proof that Kodi plays: two readings ``settle`` apart, advancing at about real speed,
    /// with the item not stopped in between.
    private func prove(_ uri: String, player id: Int64, watch: StartWatch, on kodi: KodiConnection) -> EventLoopFuture<PlaybackProof> {
        self.position(player: id, on: kodi).flatMap { first in
            self.eventLoop.flatScheduleTask(in: self.settle) { self.position(player: id, on: kodi) }.futureResult.flatMapThrowing { second in
                guard !watch.stopped else { throw PlaybackFailure.didNotPlay("Kodi stopped \(uri) while it was proved") }
                return try PositionReading.proof(from: first.reading, to: second.reading, of: uri).get()
            }
        }
    }
}

/// What one start has heard. Confined to the connection's loop.
private final class StartWatch: @unchecked Sendable {
    let promise: EventLoopPromise<Date>
    /// Whether `Player.Open` has been sent: notifications before are of what played before.
    var opened = false
    var startedAt: Date?
    var stopped = false
    private var done = false

    /// Completes ``promise`` with `result`, once.
    func finish(_ result: Result<Date, any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
    }

    init(promise: EventLoopPromise<Date>) {
        self.promise = promise
    }
}
