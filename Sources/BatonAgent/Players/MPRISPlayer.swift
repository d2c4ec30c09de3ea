import BatonCore
import BatonNet
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// An app's MPRIS player (mpv with mpv-mpris, VLC, ...): a running player that owns
/// `busName` on a D-Bus bus, driven through `org.mpris.MediaPlayer2.Player`. The agent only
/// attaches: a player that is not on the bus is `player_failed` ("... is not on the bus")
/// until it is, and one that goes away and comes back is found again by its name. A bus
/// connection that is lost is made again after a pause that grows with each failure; calls
/// in between make it at once. MPRIS has no queue and no mute: the entry asked for plays
/// alone, and muting sets the volume to 0 (the volume before is given back on unmute). Confined
/// to its loop.
final class MPRISPlayer: Player, @unchecked Sendable {
    let eventLoop: any EventLoop
    let busName: String
    /// The bus's address; nil for the session bus.
    let address: String?
    let logger: Logger
    /// The deadline of each call to the player.
    var callTimeout: TimeAmount = .seconds(2)
    /// The deadline of a whole play, from the call to its proof.
    var playTimeout: TimeAmount = .seconds(10)
    /// How long a seek, pause or resume may take to show in the player's position or status.
    var settleTimeout: TimeAmount = .seconds(5)
    /// The least time between the two readings that prove playback advances (a player with a
    /// coarse position waits longer: see ``proofSpan``).
    var settle: TimeAmount = .milliseconds(300)
    private var connection: MPRISConnection?
    private var connecting: EventLoopFuture<MPRISConnection>?
    private var stopping = false
    /// How long to wait before making a lost bus connection again.
    private let retry = RetryPause()
    /// The player's `Identity` (`mpv`, `VLC media player`), read when it is found on the bus.
    private(set) var identity: String?
    /// Who is told of the player's signals, by ticket.
    private let watchers = Watchers<MPRISSignal>()
    /// Who hears the player's changes (``watch(_:)``), across connections, and what tells them.
    private let changeWatchers = Watchers<PlayerChange>()
    var changes = MPRISChangeTracker()
    /// The volume (0...1) to give back when unmuted, and whether the agent muted it.
    var unmutedVolume: Double?
    var muted = false

    init(busName: String, address: String?, on eventLoop: any EventLoop, logger: Logger) {
        self.busName = busName
        self.address = address
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// How finely the player reports its position, and how long its seeks take, by its
    /// `Identity`, as measured here (MPRISFiguresTests) with a null audio output: mpv-mpris
    /// reads mpv's `time-pos`, which moves in steps of 50–100 ms, and a seek is answered (mpv
    /// plays from where it landed) in 3–17 ms (up to ~60 ms on a loaded machine); VLC's
    /// position moves in steps of ~280 ms, its seeks are answered in 1–15 ms.
    /// A player not measured is taken to be as coarse as VLC and slower to seek.
    var timing: PlayerTiming { Self.timing(identity: identity) }

    static func timing(identity: String?) -> PlayerTiming {
        switch identity {
        case "mpv"?: PlayerTiming(granularity: 0.1, seekLatency: 0.01)
        case "VLC media player"?: PlayerTiming(granularity: 0.3, seekLatency: 0.01)
        default: PlayerTiming(granularity: 0.3, seekLatency: 0.05)
        }
    }

    /// How long apart the two readings of a proof are: ``settle``, or three steps of the
    /// player's position if that is longer, so it moves by at least two.
    var proofSpan: TimeAmount {
        max(settle, .nanoseconds(Int64(3 * timing.granularity * 1e9)))
    }

    func start() {
        eventLoop.execute { [self] in
            connect().whenFailure { [logger, busName] error in
                logger.warning("the bus is not available yet", metadata: ["player": "\(busName)", "reason": "\(ErrorWords.of(error))"])
            }
        }
    }

    /// The connection to the bus: the one open, else made now.
    func connect() -> EventLoopFuture<MPRISConnection> {
        eventLoop.preconditionInEventLoop()
        if let connection, connection.isOpen { return eventLoop.makeSucceededFuture(connection) }
        if let connecting { return connecting }
        guard !stopping else { return eventLoop.makeFailedFuture(PlaybackFailure.player("the agent is stopping")) }
        let made = MPRISConnection.open(busName: busName, address: address, callTimeout: callTimeout, on: eventLoop, logger: logger)
        connecting = made
        made.whenComplete { [self] result in
            connecting = nil
            guard case .success(let opened) = result else { return }
            guard !stopping else { return opened.close() }
            connection = opened
            retry.connected()
            opened.onSignal = { [weak self, weak opened] signal in
                guard let self, let opened, connection === opened else { return }
                signalled(signal, on: opened)
            }
            opened.onClosed = { [weak self, weak opened] reason in
                guard let self, let opened else { return }
                lost(opened, reason)
            }
            if let owner = opened.owner {
                logger.info("attached to \(busName)", metadata: ["owner": "\(owner)"])
                learnIdentity(on: opened)
                learnState(on: opened)
            } else {
                logger.warning("\(busName) is not on the bus yet", metadata: ["bus": "\(address ?? "session")"])
            }
        }
        return made.flatMapErrorThrowing { [busName] error in
            throw PlaybackFailure.player("cannot reach the bus of \(busName): \(ErrorWords.of(error))")
        }
    }

    /// The bus connection broke: made again after a pause, unless stopping.
    private func lost(_ lost: MPRISConnection, _ reason: MPRISError) {
        guard connection === lost else { return }
        connection = nil
        identity = nil
        logger.warning("lost the bus of \(busName); connecting again", metadata: ["reason": "\(reason)"])
        reconnect()
    }

    private func reconnect() {
        retry.retry(on: eventLoop, while: { [self] in !stopping && connection == nil }, { [self] in connect() }) { [self] error in
            logger.error("cannot reach the bus again", metadata: ["player": "\(busName)", "reason": "\(error)", "next try in": "\(retry.following.words)"])
        }
    }

    private func learnIdentity(on connection: MPRISConnection) {
        _ = identified(on: connection)
    }

    /// The connection, once the player's `Identity` (which its ``timing`` goes by) is known,
    /// read now if it is not; a player that does not say is taken as unknown.
    func identified(on connection: MPRISConnection) -> EventLoopFuture<MPRISConnection> {
        guard identity == nil else { return eventLoop.makeSucceededFuture(connection) }
        return connection.property("Identity", of: MPRISConnection.rootInterface).map { [self] value in
            if self.connection === connection {
                identity = value.stringValue
                logger.debug("\(busName) is \(identity ?? "unnamed")")
            }
            return connection
        }.recover { _ in connection }
    }

    /// Reads how the player stands, for the change tracker to start from.
    private func learnState(on connection: MPRISConnection) {
        reading(on: connection).whenSuccess { [self] reading in
            guard self.connection === connection else { return }
            changes.know(reading.properties)
        }
    }

    private func signalled(_ signal: MPRISSignal, on connection: MPRISConnection) {
        if case .owner(let owner) = signal {
            identity = nil
            if let owner {
                logger.info("\(busName) is on the bus", metadata: ["owner": "\(owner)"])
                learnIdentity(on: connection)
                learnState(on: connection)
            } else {
                logger.warning("\(busName) left the bus")
            }
        }
        for change in changes.take(signal) { changeWatchers.tell(change) }
        watchers.tell(signal)
    }

    func watch(_ handler: @escaping (PlayerChange) -> Void) -> () -> Void {
        eventLoop.preconditionInEventLoop()
        return changeWatchers.add(handler)
    }

    /// Tells `watcher` of every signal of the player until the returned function is called.
    func watchSignals(_ watcher: @escaping @Sendable (MPRISSignal) -> Void) -> @Sendable () -> Void {
        eventLoop.preconditionInEventLoop()
        return watchers.add(watcher)
    }

    /// A failure of this player, for `error` (of the bus, or of doing `what`).
    func failure(_ error: any Error, _ what: String) -> PlaybackFailure {
        switch error {
        case let failure as PlaybackFailure: failure
        case MPRISError.notOnBus(let name): .player("\(name) is not on the bus")
        default: .player("\(busName): \(what): \(ErrorWords.of(error))")
        }
    }

    func state() -> EventLoopFuture<PlaybackState> {
        eventLoop.flatSubmit { [self] in
            connect().flatMap { self.identified(on: $0) }.flatMap { self.reading(on: $0) }.map { [self] reading in
                let uri = reading.properties.url.map(Self.stateURI)
                return PlaybackState(
                    uri: uri,
                    title: reading.properties.title,
                    position: uri == nil ? nil : reading.properties.position,
                    duration: reading.properties.length,
                    paused: uri == nil || reading.properties.status != "Playing",
                    rate: reading.properties.rate ?? 1,
                    volume: reading.properties.volume.map { $0 * 100 },
                    queue: uri.map { [$0] } ?? [],
                    index: uri == nil ? nil : 0,
                    at: reading.at
                ).stating(timing)
            }
            .flatMapErrorThrowing { [self] error in throw failure(error, "reading its state") }
        }
    }

    /// Every property of the player's interface, with when they were asked for and answered.
    func reading(on connection: MPRISConnection) -> EventLoopFuture<MPRISReading> {
        let asked = Date()
        return connection.properties().map { [self] values in
            let reading = MPRISReading(properties: MPRISProperties(values), asked: asked, answered: Date())
            changes.heard(reading.properties, at: reading.at)
            return reading
        }
    }

    /// What `state` says a player's `xesam:url` is: a `file://` URL as its path, as the agent
    /// names files; any other URL as it is.
    static func stateURI(_ url: String) -> String {
        guard url.hasPrefix("file://"), let parsed = URL(string: url), parsed.isFileURL else { return url }
        return parsed.path
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { [self] in
            stopping = true
            let pending = connecting.map { $0.map { _ in }.recover { _ in } } ?? eventLoop.makeSucceededVoidFuture()
            return pending.map { [self] in
                // The player is not the agent's: it is left as it is.
                connection?.close()
                connection = nil
                watchers.removeAll()
            }
        }
    }

    // MARK: Volume

    /// Sets the volume the request asks for, or 0 when it asks to play muted (keeping the
    /// volume before, to give back); an unmuted play gives back a volume the agent muted.
    func volume(for request: PlaybackCommand.PlayRequest, on connection: MPRISConnection) -> EventLoopFuture<Void> {
        if let volume = request.volume { unmutedVolume = volume / 100 }
        if request.muted { return mute(true, on: connection) }
        if let volume = request.volume {
            muted = false
            return setVolume(volume / 100, on: connection)
        }
        return muted ? mute(false, on: connection) : eventLoop.makeSucceededVoidFuture()
    }

    /// Mutes (volume 0, the volume before kept) or gives back the volume before.
    func mute(_ mute: Bool, on connection: MPRISConnection) -> EventLoopFuture<Void> {
        guard mute else {
            muted = false
            return setVolume(unmutedVolume ?? 1, on: connection)
        }
        guard !muted else { return setVolume(0, on: connection) }
        return connection.property("Volume").flatMap { [self] value in
            if let volume = value.doubleValue, volume > 0 { unmutedVolume = volume }
            muted = true
            return setVolume(0, on: connection)
        }
    }

    /// Sets the `Volume` property to `level` (0...1), answered once the player says it has it;
    /// a player that keeps another volume (one without a mixer) fails.
    func setVolume(_ level: Double, on connection: MPRISConnection) -> EventLoopFuture<Void> {
        let deadline = NIODeadline.now() + settleTimeout
        let last = NIOLockedValueBox<Double?>(nil)
        return connection.set("Volume", .double(level)).flatMap { [self] in
            until(deadline, on: connection, timedOut: { [busName] in
                let kept = last.withLockedValue { $0 }.map { String(format: "%.0f", $0 * 100) } ?? "?"
                return .player("\(busName) kept its volume at \(kept) when asked for \(String(format: "%.0f", level * 100)) (no mixer?)")
            }) {
                connection.property("Volume").map { value in
                    last.withLockedValue { $0 = value.doubleValue }
                    return abs((value.doubleValue ?? -1) - level) <= 0.01 ? () : nil
                }
            }
        }
    }
}

/// The properties of an MPRIS player's `org.mpris.MediaPlayer2.Player`, as read: times in
/// seconds, the volume 0...1. `Position` may come as an int64 or (VLC declares it so) an int32.
struct MPRISProperties: Sendable, Equatable {
    /// `Playing`, `Paused` or `Stopped`.
    var status: String?
    /// The track's `xesam:url`, `xesam:title`, `mpris:trackid` and `mpris:length` (when above 0).
    var url: String?
    var title: String?
    var trackID: String?
    var length: Double?
    var position: Double?
    var volume: Double?
    var rate: Double?

    init(_ values: [String: DBusValue]) {
        status = values["PlaybackStatus"]?.stringValue
        let metadata = values["Metadata"]?.dictionaryValue ?? [:]
        url = metadata["xesam:url"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        title = metadata["xesam:title"]?.stringValue
        trackID = metadata["mpris:trackid"]?.stringValue
        length = metadata["mpris:length"]?.int64Value.flatMap { $0 > 0 ? Double($0) / 1e6 : nil }
        position = values["Position"]?.int64Value.map { Double($0) / 1e6 }
        volume = values["Volume"]?.doubleValue
        rate = values["Rate"]?.doubleValue
    }
}

/// One reading of a player's properties, and when it was asked and answered.
struct MPRISReading: Sendable {
    let properties: MPRISProperties
    let asked: Date
    let answered: Date

    /// When it was read: the middle of the round trip.
    var at: Date { asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2) }

    /// Its position as a ``PositionReading`` (0 when the player gave none).
    var position: PositionReading { PositionReading(seconds: properties.position ?? 0, asked: asked, answered: answered) }
}
