import BatonCore
import BatonNet
import Foundation
import Logging
import NIOCore

/// An app's Kodi: a running Kodi reached over its JSON-RPC TCP port, attached to (never
/// started or stopped by the agent), connected to when first needed and again after it goes
/// away, with a growing pause between tries. Confined to its loop.
///
/// Kodi's timing is learned as it plays (see ../shared/reference/renderers.md): it begins some
/// 0.6–0.9 s before the position it is asked to resume at (``startLead``), and every seek holds
/// still about a second before it plays on (``seekStall``, the seek latency its states and
/// proofs say). A seek makes a paused Kodi play: a paused one is positioned by playing up to
/// the position and pausing there (muted meanwhile; see ``pause(at:player:on:)``).
final class KodiPlayer: Player, @unchecked Sendable {
    let eventLoop: any EventLoop
    let host: String
    let port: Int
    let logger: Logger
    /// The deadline of each call to Kodi.
    var callTimeout: TimeAmount = .seconds(2)
    /// How long play waits for Kodi to start what it opened, and a seek for it to play again.
    var startTimeout: TimeAmount = .seconds(10)
    /// How long play waits between the two readings that prove playback advances.
    var settle: TimeAmount = .milliseconds(300)
    /// Kodi's position moves in steps of about 10 ms.
    static let granularity = 0.01
    /// How close to the asked position a start or a paused positioning is to land before it is
    /// corrected.
    static let precision = 0.05

    /// How far before the asked position Kodi begins, in seconds: asked for P it plays as if it
    /// had started at P − lead when it said `Player.OnAVStart`. Learned from each start.
    var startLead: Double { startLeads.value }
    /// How long a seek holds Kodi still before it plays on, in seconds: sought to X at t, it
    /// plays as if it had been at X − stall at t. Learned from each seek.
    var seekStall: Double { seekStalls.value }
    /// How much further than where it was when asked Kodi's position ends after a pause, in
    /// seconds. Learned from each positioned pause.
    var pauseOvershoot: Double { pauseOvershoots.value }
    var startLeads = Learned(0.85, in: 0...3)
    var seekStalls = Learned(1.05, in: 0.2...3)
    var pauseOvershoots = Learned(0.4, in: 0...1.5)
    /// The last start play made: the position asked, the instant Kodi said it started, and the
    /// error it was left with (what the player measured on its own readings).
    var lastStart: KodiStart?

    /// Who hears Kodi's changes (``watch(_:)``), across its connections.
    private let watchers = Watchers<PlayerChange>()
    var changes = KodiChangeTracker()
    /// How many of the player's own multi-step doings (a play, a paused seek) are under way:
    /// the notifications they cause are theirs, not changes to tell.
    var busy = 0
    private var connection: KodiConnection?
    private var connecting: EventLoopFuture<KodiConnection>?
    private var stopping = false
    /// How long to wait before the next try to connect (see ``RetryPause``).
    private let retry = RetryPause()

    init(host: String, port: Int, on eventLoop: any EventLoop, logger: Logger) {
        self.host = host
        self.port = port
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// What states and proofs say of Kodi's timing.
    var timing: PlayerTiming { PlayerTiming(granularity: Self.granularity, seekLatency: seekStall) }

    func start() {
        eventLoop.execute { [self] in
            connect().whenFailure { [self] error in
                logger.warning("Kodi is not available yet", metadata: ["address": "\(host):\(port)", "reason": "\(ErrorWords.of(error))"])
                reconnect()
            }
        }
    }

    /// The connection to Kodi: the one open, else made now.
    func connect() -> EventLoopFuture<KodiConnection> {
        eventLoop.preconditionInEventLoop()
        if let connection, connection.isOpen { return eventLoop.makeSucceededFuture(connection) }
        if let connecting { return connecting }
        guard !stopping else { return eventLoop.makeFailedFuture(PlaybackFailure.player("the agent is stopping")) }
        let made = KodiConnection.connect(host: host, port: port, on: eventLoop, timeout: callTimeout)
        connecting = made
        made.whenComplete { [self] result in
            connecting = nil
            guard case .success(let opened) = result else { return }
            if stopping { return opened.close() }
            opened.callTimeout = callTimeout
            connection = opened
            retry.connected()
            logger.info("attached to Kodi", metadata: ["address": "\(host):\(port)"])
            changes.reset(loaded: false)
            _ = opened.watchNotifications { [weak self] notification in
                guard let self, let change = changes.take(notification), busy == 0 else { return }
                watchers.tell(change)
            }
            opened.onClosed = { [weak self, weak opened] reason in
                guard let self, let opened else { return }
                lost(opened, reason)
            }
        }
        return made.flatMapErrorThrowing { [host, port] error in
            throw PlaybackFailure.player("Kodi at \(host):\(port) is not available", error)
        }
    }

    /// Kodi went away: connect again after a pause, unless stopping.
    private func lost(_ lost: KodiConnection, _ reason: KodiError) {
        guard connection === lost else { return }
        connection = nil
        logger.warning("lost Kodi; connecting again", metadata: ["address": "\(host):\(port)", "reason": "\(reason)"])
        reconnect()
    }

    /// Connects again after a pause that grows with each failure, until Kodi answers.
    private func reconnect() {
        retry.retry(on: eventLoop, while: { [self] in !stopping && connection == nil }, { [self] in connect() }) { [self] error in
            logger.info("Kodi is still not available", metadata: ["reason": "\(ErrorWords.of(error))", "next try in": "\(retry.following.words)"])
        }
    }

    func watch(_ handler: @escaping (PlayerChange) -> Void) -> () -> Void {
        eventLoop.preconditionInEventLoop()
        return watchers.add(handler)
    }

    /// Tells the watchers `change`, made by the player's own doings.
    func tell(_ change: PlayerChange) {
        watchers.tell(change)
    }

    func state() -> EventLoopFuture<PlaybackState> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { kodi in self.read(on: kodi).flatMap { self.held($0, on: kodi) } }
                .map { $0.stating(self.timing) }
                .flatMapErrorThrowing { error in throw PlaybackFailure.player("Kodi", error) }
        }
    }

    /// The id of the player Kodi plays with (audio or video), nil when it plays nothing.
    func activePlayer(on kodi: KodiConnection) -> EventLoopFuture<Int64?> {
        kodi.call("Player.GetActivePlayers").flatMapThrowing { players in
            guard let list = players.arrayValue else { throw KodiError.garbage("Kodi's active players are not a list: \(players.serialized().prefix(80))") }
            let playing = list.first { ["audio", "video"].contains($0["type"]?.stringValue ?? "") } ?? list.first
            return playing?["playerid"]?.intValue
        }
    }

    /// What Kodi does: its active player's time, total time, speed and playlist entry, the
    /// item's file, the playlist, and the application's volume; the position read at the middle
    /// of the round trip of `Player.GetProperties`.
    func read(on kodi: KodiConnection) -> EventLoopFuture<PlaybackState> {
        let volume = kodi.call("Application.GetProperties", .object([JSON.Member("properties", .array([.string("volume"), .string("muted")]))]))
            .map { $0["volume"]?.doubleValue }
        return activePlayer(on: kodi).flatMap { id in
            guard let id else { return volume.map { PlaybackState(volume: $0, at: Date()) } }
            let asked = Date()
            let properties = kodi.call("Player.GetProperties", .object([
                JSON.Member("playerid", .int(id)),
                JSON.Member("properties", .array(["time", "totaltime", "speed", "playlistid", "position"].map { .string($0) })),
            ])).map { ($0, Date()) }
            let item = kodi.call("Player.GetItem", .object([
                JSON.Member("playerid", .int(id)), JSON.Member("properties", .array([.string("file"), .string("title")])),
            ]))
            return properties.and(item).and(volume).flatMap { first, volume in
                let ((properties, answered), item) = first
                let playlist = properties["playlistid"]?.intValue ?? -1
                let queue = playlist < 0 ? self.eventLoop.makeSucceededFuture([String]()) : kodi.call("Playlist.GetItems", .object([
                    JSON.Member("playlistid", .int(playlist)), JSON.Member("properties", .array([.string("file")])),
                ])).map { $0["items"]?.arrayValue?.compactMap { $0["file"]?.stringValue } ?? [] }
                return queue.map { queue in
                    let speed = properties["speed"]?.doubleValue ?? 0
                    let file = item["item"]?["file"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                    let title = item["item"]?["title"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                    let index = properties["position"]?.intValue.flatMap { $0 >= 0 ? Int($0) : nil }
                    return PlaybackState(
                        uri: file, title: title,
                        position: file == nil ? nil : KodiTime.seconds(properties["time"]),
                        duration: KodiTime.seconds(properties["totaltime"]).flatMap { $0 > 0 ? $0 : nil },
                        paused: speed == 0, rate: speed == 0 ? 1 : speed, volume: volume,
                        queue: queue.isEmpty ? (file.map { [$0] } ?? []) : queue, index: queue.isEmpty ? (file == nil ? nil : 0) : index,
                        at: asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2))
                }
            }
        }
    }

    /// `state` with, when Kodi holds paused, the middle of where it says it is over 100 ms: a
    /// paused Kodi's time wobbles by some 0.1 s (see ``settled(player:on:)``).
    private func held(_ state: PlaybackState, on kodi: KodiConnection) -> EventLoopFuture<PlaybackState> {
        guard state.paused, state.position != nil else { return eventLoop.makeSucceededFuture(state) }
        return activePlayer(on: kodi).flatMap { id in
            guard let id else { return self.eventLoop.makeSucceededFuture(state) }
            return self.samples(6, player: id, on: kodi).map { readings in
                let positions = readings.map(\.seconds)
                guard let low = positions.min(), let high = positions.max(), high - low < 0.25,
                      let first = readings.first, let last = readings.last else { return state }
                var held = state
                held.position = (low + high) / 2
                held.at = first.asked.addingTimeInterval(last.answered.timeIntervalSince(first.asked) / 2)
                return held
            }
        }
    }

    func control(_ command: PlaybackCommand) -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { kodi in self.control(command, on: kodi) }
                .flatMapErrorThrowing { error in throw PlaybackFailure.player("Kodi", error) }
        }
    }

    private func control(_ command: PlaybackCommand, on kodi: KodiConnection) -> EventLoopFuture<Void> {
        switch command {
        case .volume(let level):
            return kodi.call("Application.SetVolume", .object([JSON.Member("volume", .int(Int64(level.rounded())))])).map { _ in }
        case .mute(let muted):
            return kodi.call("Application.SetMute", .object([JSON.Member("mute", .bool(muted))])).map { _ in }
        case .state, .play, .watch, .unwatch, .share:
            return eventLoop.makeFailedFuture(PlaybackFailure.badRequest("not a control command"))
        case .pause, .resume, .stop, .seek, .seekBy:
            break
        }
        return activePlayer(on: kodi).flatMap { id in
            guard let id else {
                switch command {
                case .pause, .resume, .stop: return self.eventLoop.makeSucceededVoidFuture()
                default: return self.eventLoop.makeFailedFuture(PlaybackFailure.player("Kodi plays nothing to seek in"))
                }
            }
            let player = JSON.Member("playerid", .int(id))
            switch command {
            case .pause:
                return kodi.call("Player.PlayPause", .object([player, JSON.Member("play", .bool(false))]))
                    .flatMap { _ in self.settled(player: id, on: kodi).map { _ in } }
            case .resume:
                return kodi.call("Player.PlayPause", .object([player, JSON.Member("play", .bool(true))]))
                    .flatMap { _ in self.advancing(player: id, on: kodi) }
            case .stop:
                return kodi.call("Player.Stop", .object([player])).flatMap { _ in self.stopped(on: kodi) }
            case .seek(let position):
                return self.seek(to: position, player: id, on: kodi)
            case .seekBy(let offset):
                return self.position(player: id, on: kodi).flatMap { now in
                    self.seek(to: max(0, now.reading.seconds + offset), player: id, on: kodi)
                }
            default:
                return self.eventLoop.makeFailedFuture(PlaybackFailure.badRequest("not a control command"))
            }
        }
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.submit { [self] in
            // Kodi is attached to, never started: it is left as it is.
            stopping = true
            connection?.close()
            connection = nil
        }
    }
}

/// A figure of Kodi's timing learned from what it did: the median of the last five
/// measures (one start or seek on a cold or loaded Kodi can be off by a few tenths), the
/// first guess until one is made. Measures outside `range` are not believed.
struct Learned: Sendable {
    private(set) var measures: [Double] = []
    let guess: Double
    let range: ClosedRange<Double>

    init(_ guess: Double, in range: ClosedRange<Double>) {
        self.guess = guess
        self.range = range
    }

    /// The median of the measures, or the guess.
    var value: Double {
        guard !measures.isEmpty else { return guess }
        let sorted = measures.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    mutating func add(_ measure: Double) {
        guard range.contains(measure) else { return }
        measures.append(measure)
        if measures.count > 5 { measures.removeFirst() }
    }
}

/// One start of ``KodiPlayer/play(_:)``: the position asked, when Kodi said it started
/// (`Player.OnAVStart`), and how far off its playback was from the asked position advanced
/// from that instant, after any correction (positive: ahead).
struct KodiStart: Sendable {
    var position: Double
    var at: Date
    var error: Double
}
