import BatonCore
import Foundation
import NIOCore

extension KodiPlayer {
    /// How long before a paused position Kodi is made to play from, to pause there.
    static let leadIn = 0.8

    /// One reading of the position of Kodi's player `id`, with its speed.
    func position(player id: Int64, on kodi: KodiConnection) -> EventLoopFuture<(reading: PositionReading, speed: Double)> {
        let asked = Date()
        return kodi.call("Player.GetProperties", .object([
            JSON.Member("playerid", .int(id)), JSON.Member("properties", .array([.string("time"), .string("speed")])),
        ])).flatMapThrowing { answer in
            guard let seconds = KodiTime.seconds(answer["time"]) else {
                throw KodiError.garbage("Kodi's time is not a time: \(answer.serialized().prefix(80))")
            }
            return (PositionReading(seconds: seconds, asked: asked, answered: Date()), answer["speed"]?.doubleValue ?? 0)
        }
    }

    /// Asks `step` every `interval` until it has a value; fails with `failure` once `deadline`
    /// has passed without one.
    func poll<T: Sendable>(
        every interval: TimeAmount = .milliseconds(20), until deadline: NIODeadline, failure: @escaping @Sendable () -> PlaybackFailure,
        _ step: @escaping @Sendable () -> EventLoopFuture<T?>
    ) -> EventLoopFuture<T> {
        step().flatMap { value in
            if let value { return self.eventLoop.makeSucceededFuture(value) }
            guard NIODeadline.now() + interval < deadline else { return self.eventLoop.makeFailedFuture(failure()) }
            return self.eventLoop.flatScheduleTask(in: interval) { self.poll(every: interval, until: deadline, failure: failure, step) }.futureResult
        }
    }

    /// Where a paused Kodi holds: its time wobbles by some 0.1 s while paused (a sawtooth with
    /// the output's buffer), so this is the middle of the readings of 160 ms, once they stay
    /// within 0.25 s of one another (the first ~0.3 s after a pause they jump); by
    /// ``startTimeout``.
    func settled(player id: Int64, on kodi: KodiConnection) -> EventLoopFuture<PositionReading> {
        let deadline = NIODeadline.now() + startTimeout
        return poll(every: .milliseconds(100), until: deadline, failure: { .didNotPlay("Kodi's position did not settle after a pause") }) {
            self.samples(8, player: id, on: kodi).map { readings -> PositionReading? in
                let positions = readings.map(\.seconds)
                guard let low = positions.min(), let high = positions.max(), high - low < 0.25,
                      let first = readings.first, let last = readings.last else { return nil }
                return PositionReading(seconds: (low + high) / 2, asked: first.asked, answered: last.answered)
            }
        }
    }

    /// `count` readings of a paused player, 20 ms apart; nil when it plays.
    func samples(_ count: Int, player id: Int64, on kodi: KodiConnection) -> EventLoopFuture<[PositionReading]> {
        position(player: id, on: kodi).flatMap { first in
            guard count > 1 else { return self.eventLoop.makeSucceededFuture([first.reading]) }
            return self.eventLoop.flatScheduleTask(in: .milliseconds(20)) {
                self.samples(count - 1, player: id, on: kodi)
            }.futureResult.map { [first.reading] + $0 }
        }
    }

    /// Answers once a resumed Kodi plays on steadily: its time jumps back some 0.1 s within
    /// the first ~0.15 s after a resume, then advances; three readings that rise after that, by
    /// ``startTimeout``.
    func advancing(player id: Int64, on kodi: KodiConnection) -> EventLoopFuture<Void> {
        let deadline = NIODeadline.now() + startTimeout
        let watch = SeekWatch()
        return eventLoop.flatScheduleTask(in: .milliseconds(150)) {
            self.poll(until: deadline, failure: { .didNotPlay("Kodi did not play on within \(self.startTimeout.words) of a resume") }) {
                self.position(player: id, on: kodi).map { now -> Void? in
                    watch.readings.append(now.reading.seconds)
                    let last = watch.readings.suffix(3)
                    return last.count == 3 && zip(last, last.dropFirst()).allSatisfy({ $0 < $1 }) ? () : nil
                }
            }
        }.futureResult
    }

    /// Answers once Kodi plays nothing (its stop takes some 0.2 s after it answers), by
    /// ``startTimeout``.
    func stopped(on kodi: KodiConnection) -> EventLoopFuture<Void> {
        poll(until: .now() + startTimeout, failure: { .player("Kodi still plays \(self.startTimeout.words) after it was stopped") }) {
            self.activePlayer(on: kodi).map { $0 == nil ? () : nil }
        }
    }

    /// Seeks to `target`, answered once Kodi plays from where it landed; a paused Kodi ends
    /// paused there (see ``pause(at:player:on:tries:)``).
    func seek(to target: Double, player id: Int64, on kodi: KodiConnection) -> EventLoopFuture<Void> {
        position(player: id, on: kodi).flatMap { now in
            guard now.speed == 0 else { return self.seekPlaying(to: target, player: id, on: kodi) }
            self.busy += 1
            return self.muted(on: kodi) {
                self.seekPlaying(to: max(0, target - Self.leadIn), player: id, on: kodi, learn: false)
                    .flatMap { self.pause(at: target, player: id, on: kodi).map { _ in } }
            }.always { _ in self.busy -= 1 }.map { self.tell(.positionJumped) }
        }
    }

    /// Seeks a playing Kodi to `target`, answered once it plays from where it landed: its time
    /// advancing again after `Player.OnSeek` (until then it reads the target, then drops
    /// about a second back, then moves on); a stop (a seek past the end) ends the wait too.
    /// Measures the seek's stall (how long Kodi held still) into ``seekStall`` when `learn`.
    func seekPlaying(to target: Double, player id: Int64, on kodi: KodiConnection, learn: Bool = true) -> EventLoopFuture<Void> {
        let watch = SeekWatch()
        let stop = kodi.watchNotifications { notification in
            if notification.method == "Player.OnSeek" { watch.sought = true }
            if notification.method == "Player.OnStop" { watch.stopped = true }
        }
        let sent = Date()
        let deadline = NIODeadline.now() + startTimeout
        return kodi.call("Player.Seek", .object([
            JSON.Member("playerid", .int(id)), JSON.Member("value", .object([JSON.Member("time", KodiTime.json(target))])),
        ]))
        .flatMap { _ in
            self.poll(until: deadline, failure: { .player("Kodi did not play again within \(self.startTimeout.words) of a seek to \(target) s") }) {
                guard !watch.stopped else { return self.eventLoop.makeSucceededFuture(true) }
                return self.position(player: id, on: kodi).map { now in
                    guard watch.sought else { return nil }
                    watch.readings.append(now.reading.seconds)
                    let last = watch.readings.suffix(3)
                    guard last.count == 3, zip(last, last.dropFirst()).allSatisfy({ $0 < $1 }) else { return nil }
                    return false
                }
            }
        }
        .flatMap { stopped -> EventLoopFuture<Void> in
            guard learn, !stopped else { return self.eventLoop.makeSucceededVoidFuture() }
            // Past the first jumps: where it plays says how long it held still.
            return self.eventLoop.flatScheduleTask(in: .milliseconds(200)) { self.position(player: id, on: kodi) }.futureResult.map { now in
                let stall = target - (now.reading.seconds - now.reading.at.timeIntervalSince(sent))
                guard now.speed != 0 else { return }
                self.seekStalls.add(stall)
                self.logger.debug("Kodi's seek stall", metadata: ["seconds": "\(String(format: "%.3f", stall))"])
            }
        }
        .always { _ in stop() }
    }

    /// Pauses a playing Kodi at `target`: reads where it plays, pauses it just when it will
    /// stop there (less ``pauseOvershoot``, learned from each pause), and reads where it
    /// holds. Kodi's pause lands within some ±60 ms of where it is aimed: one further off than
    /// ``precision`` is tried again (played from ``leadIn`` before), `tries` times at most
    /// (each some 1.5 s). Answers where it holds.
    func pause(at target: Double, player id: Int64, on kodi: KodiConnection, tries: Int = 5) -> EventLoopFuture<PositionReading> {
        position(player: id, on: kodi).flatMap { first in
            self.eventLoop.flatScheduleTask(in: .milliseconds(100)) { self.position(player: id, on: kodi) }.futureResult.flatMap { second in
                guard second.reading.seconds > first.reading.seconds else {
                    return self.eventLoop.makeFailedFuture(PlaybackFailure.didNotPlay("Kodi did not play on to \(target) s to pause there"))
                }
                // Where it plays: seconds at the reading's instant, advancing in real time.
                let line = second.reading.seconds - second.reading.at.timeIntervalSince1970
                let aim = target - self.pauseOvershoot
                let delay = aim - line - Date().timeIntervalSince1970
                guard delay > 0.02 else {
                    guard tries > 1 else {
                        return self.eventLoop.makeFailedFuture(PlaybackFailure.didNotPlay("Kodi played past \(target) s before it could be paused there"))
                    }
                    return self.seekPlaying(to: max(0, target - Self.leadIn), player: id, on: kodi, learn: false)
                        .flatMap { self.pause(at: target, player: id, on: kodi, tries: tries - 1) }
                }
                return self.eventLoop.flatScheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
                    let asked = Date()
                    return kodi.call("Player.PlayPause", .object([JSON.Member("playerid", .int(id)), JSON.Member("play", .bool(false))]))
                        .flatMap { _ in
                            let sentAt = asked.addingTimeInterval(Date().timeIntervalSince(asked) / 2)
                            return self.eventLoop.flatScheduleTask(in: .milliseconds(300)) { self.settled(player: id, on: kodi) }.futureResult
                                .map { held in (held, sentAt) }
                        }
                }.futureResult.flatMap { held, sentAt in
                    let overshoot = held.seconds - (line + sentAt.timeIntervalSince1970)
                    self.pauseOvershoots.add(overshoot)
                    guard abs(held.seconds - target) > Self.precision, tries > 1 else { return self.eventLoop.makeSucceededFuture(held) }
                    self.logger.debug("Kodi paused off its mark; again", metadata: ["target": "\(target)", "held": "\(held.seconds)"])
                    return self.seekPlaying(to: max(0, target - Self.leadIn), player: id, on: kodi, learn: false)
                        .flatMap { self.pause(at: target, player: id, on: kodi, tries: tries - 1) }
                }
            }
        }
    }

    /// Runs `body` with Kodi muted, and gives back its mute as it was.
    func muted<T: Sendable>(on kodi: KodiConnection, _ body: @escaping @Sendable () -> EventLoopFuture<T>) -> EventLoopFuture<T> {
        kodi.call("Application.GetProperties", .object([JSON.Member("properties", .array([.string("muted")]))])).flatMap { properties in
            let was = properties["muted"]?.boolValue ?? false
            let mute = was ? self.eventLoop.makeSucceededFuture(JSON.null) : kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(true))]))
            let done = mute.flatMap { _ in body() }
            guard !was else { return done }
            let promise = self.eventLoop.makePromise(of: T.self)
            done.whenComplete { result in
                kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(false))])).whenComplete { unmuted in
                    if case .failure(let error) = unmuted { self.logger.warning("Kodi would not unmute", metadata: ["reason": "\(error)"]) }
                    promise.completeWith(result)
                }
            }
            return promise.futureResult
        }
    }
}

/// What one ``KodiPlayer/seekPlaying(to:player:on:learn:)`` has heard. Confined to the
/// connection's loop.
private final class SeekWatch: @unchecked Sendable {
    var sought = false
    var stopped = false
    var readings: [Double] = []
}
