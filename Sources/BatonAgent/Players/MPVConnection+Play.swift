import BatonCore
import BatonNet
import Foundation
import NIOCore

extension MPVConnection {
    /// Plays `uri` from `position` seconds (staying paused if `paused`), answered only once
    /// mpv proves it: the file loaded (its `start-file`, then `playback-restart`) and, unless
    /// paused, its position advancing at about real speed across two readings `settle` apart,
    /// with no end of that file in between. Events are matched by the entry loadfile
    /// answers with, since mpv also reports the entry it replaced. All within `timeout`.
    public func play(
        _ uri: String, from position: Double, paused: Bool = false, settle: TimeAmount = .milliseconds(300),
        timeout: TimeAmount = .seconds(5)
    ) -> EventLoopFuture<PlaybackProof> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.play(uri, from: position, paused: paused, settle: settle, timeout: timeout) }
        }
        let attempt = PlayAttempt(connection: self, uri: uri, paused: paused, settle: settle)
        attempt.begin(timeout: timeout)
        command(.object([
            JSON.Member("name", .string("loadfile")), JSON.Member("url", .string(uri)), JSON.Member("flags", .string("replace")),
            JSON.Member("options", .object([
                JSON.Member("start", .string(String(position))), JSON.Member("pause", .string(paused ? "yes" : "no")),
            ])),
        ])).whenComplete { result in
            switch result {
            case .success(let answer):
                guard let entry = answer["playlist_entry_id"]?.intValue else {
                    return attempt.fail(.player("mpv answered loadfile without an entry: \(answer)"))
                }
                attempt.loaded(entry)
            case .failure(let error):
                attempt.fail(.player("mpv refused to load \(uri): \(error)"))
            }
        }
        return attempt.promise.futureResult
    }
}

/// One ``MPVConnection/play(_:from:paused:settle:timeout:)``: the events seen since loadfile
/// was sent, and how far the proof has got. Confined to the connection's loop.
private final class PlayAttempt: @unchecked Sendable {
    let connection: MPVConnection
    let uri: String
    let paused: Bool
    let settle: TimeAmount
    let promise: EventLoopPromise<PlaybackProof>
    private var events: [MPVEvent] = []
    private var entry: Int64?
    private var verifying = false
    private var done = false
    private var stopWatching: (() -> Void)?
    private var timer: Scheduled<Void>?

    init(connection: MPVConnection, uri: String, paused: Bool, settle: TimeAmount) {
        self.connection = connection
        self.uri = uri
        self.paused = paused
        self.settle = settle
        promise = connection.eventLoop.makePromise(of: PlaybackProof.self)
    }

    func begin(timeout: TimeAmount) {
        stopWatching = connection.watchEvents { [self] event in
            events.append(event)
            check()
        }
        timer = connection.eventLoop.scheduleTask(in: timeout) { [self] () -> Void in
            fail(.player("mpv did not prove it plays \(uri) within \(timeout.words)"))
        }
    }

    /// loadfile answered: the entry to follow.
    func loaded(_ entry: Int64) {
        self.entry = entry
        check()
    }

    /// Looks at the events so far: an error end of the entry fails; its restart starts the proof.
    private func check() {
        guard !done, let entry else { return }
        if let ended = events.first(where: { $0.name == "end-file" && $0.playlistEntryID == entry }) {
            if ended.reason == "error" {
                // Loaded, then nothing played (a start past the end), or not even loaded.
                let start = events.firstIndex { $0.name == "start-file" && $0.playlistEntryID == entry }
                if let start, events[start...].contains(where: { $0.name == "file-loaded" }) {
                    return fail(.didNotPlay("mpv loaded \(uri) but played nothing from there: \(ended.fileError ?? "error")"))
                }
                return fail(.cannotOpen("mpv cannot open \(uri): \(ended.fileError ?? "error")"))
            }
            return fail(.didNotPlay("\(uri) ended at once (\(ended.reason ?? "no reason"))"))
        }
        guard !verifying, let start = events.firstIndex(where: { $0.name == "start-file" && $0.playlistEntryID == entry }),
              events[start...].contains(where: { $0.name == "playback-restart" })
        else { return }
        verifying = true
        reading { [self] first in
            guard !paused else { return succeed(PlaybackProof(position: first.seconds, at: first.at, rate: nil)) }
            connection.eventLoop.scheduleTask(in: settle) { [self] () -> Void in
                reading { [self] second in
                    switch PositionReading.proof(from: first, to: second, of: uri) {
                    case .success(let proof): succeed(proof)
                    case .failure(let failure): fail(failure)
                    }
                }
            }
        }
    }

    /// `time-pos`, with when it was asked and answered.
    private func reading(_ then: @escaping @Sendable (PositionReading) -> Void) {
        let asked = Date()
        connection.property("time-pos").whenComplete { [self] result in
            guard !done else { return }
            switch result {
            case .success(let value):
                guard let seconds = value.doubleValue else { return fail(.didNotPlay("mpv has no position for \(uri): \(value)")) }
                then(PositionReading(seconds: seconds, asked: asked, answered: Date()))
            case .failure(MPVError.failed(let why)):
                // No position right after the restart: it ended at once (a start past the end).
                fail(.didNotPlay("mpv plays nothing of \(uri) from there (its position: \(why))"))
            case .failure(let error):
                fail(.player("mpv did not say where \(uri) plays: \(error)"))
            }
        }
    }

    private func succeed(_ proof: PlaybackProof) {
        guard !done else { return }
        finish()
        promise.succeed(proof)
    }

    func fail(_ failure: PlaybackFailure) {
        guard !done else { return }
        finish()
        promise.fail(failure)
    }

    private func finish() {
        done = true
        timer?.cancel()
        stopWatching?()
        stopWatching = nil
    }
}
