import BatonCore
import Foundation
import NIOCore

extension MPDPlayer {
    /// Clears MPD's queue and adds `paths` (as ``mpdPath(_:)`` gives them; `local` says which
    /// are files here). MPD plays only files its database holds, and answers a file added to
    /// the music directory since its last scan with `No such song`: those are indexed on
    /// demand (`update` of each file, waited for until ``indexTimeout``), and added again. A
    /// file it still does not know is ``PlaybackFailure/cannotOpen(_:)`` saying so.
    func add(_ paths: [String], local: [Bool], uri: String, on mpd: MPDConnection) -> EventLoopFuture<[[MPDPair]]> {
        let addAll: @Sendable () -> EventLoopFuture<[[MPDPair]]> = {
            mpd.command("clear").flatMap { _ in
                EventLoopFuture.whenAllSucceed(paths.map { mpd.command("addid \(MPDConnection.quoted($0))") }, on: self.eventLoop)
            }
        }
        let files = zip(paths, local).filter(\.1).map(\.0)
        return addAll().flatMapError { error in
            guard case MPDError.failed(50, _, _) = error, !files.isEmpty else { return self.eventLoop.makeFailedFuture(error) }
            self.logger.info("MPD has not indexed what it is to play: indexing it", metadata: ["files": "\(files)"])
            return self.index(files, on: mpd).flatMap { addAll() }.flatMapErrorThrowing { again in
                if case MPDError.failed(50, _, let message) = again {
                    throw PlaybackFailure.cannotOpen(
                        "MPD cannot play \(uri): it is not in MPD's database even after updating it (\(message)); is it a file MPD can read, under its music directory?")
                }
                throw again
            }
        }
    }

    /// Has MPD index `files` (paths in its music directory): an `update` of each, then waits
    /// until its database update is over (status without `updating_db`, or a later job).
    private func index(_ files: [String], on mpd: MPDConnection) -> EventLoopFuture<Void> {
        let deadline = NIODeadline.now() + indexTimeout
        return EventLoopFuture.whenAllSucceed(files.map { mpd.command("update \(MPDConnection.quoted($0))") }, on: eventLoop)
            .flatMap { jobs in
                let last = jobs.compactMap { $0["updating_db"].flatMap { Int($0) } }.max() ?? 0
                return self.waitForUpdate(job: last, until: deadline, on: mpd)
            }
            .flatMapErrorThrowing { error in
                if error is PlaybackFailure { throw error }
                throw PlaybackFailure.player("MPD would not update its database", error)
            }
    }

    private func waitForUpdate(job: Int, until deadline: NIODeadline, on mpd: MPDConnection) -> EventLoopFuture<Void> {
        mpd.command("status").flatMap { status in
            let running = status["updating_db"].flatMap { Int($0) }
            guard let running, running <= job else { return self.eventLoop.makeSucceededVoidFuture() }
            guard NIODeadline.now() < deadline else {
                return self.eventLoop.makeFailedFuture(PlaybackFailure.player(
                    "MPD did not finish indexing within \(String(format: "%.0f", Double(self.indexTimeout.nanoseconds) / 1e9)) s (update job \(job))"))
            }
            return self.eventLoop.flatScheduleTask(in: .milliseconds(20)) {
                self.waitForUpdate(job: job, until: deadline, on: mpd)
            }.futureResult
        }
    }
}
