import BatonCore
import Foundation
import NIOCore

extension MPDConnection {
    /// What MPD is doing: `status`, `currentsong` and `playlistinfo`, sent together and
    /// answered in turn, each within `timeout` (nil: ``callTimeout``). MPD's files are relative to its music
    /// directory: with `musicDirectory`, ``PlaybackState/uri`` and the queue are paths under it.
    public func state(musicDirectory: String? = nil, timeout: TimeAmount? = nil) -> EventLoopFuture<PlaybackState> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.state(musicDirectory: musicDirectory, timeout: timeout) }
        }
        let askedAt = Date()
        let asked = NIODeadline.now()
        let status = command("status", timeout: timeout).map { ($0, NIODeadline.now()) }
        let current = command("currentsong", timeout: timeout)
        let queue = command("playlistinfo", timeout: timeout)
        return status.and(current).and(queue).map { first, queue in
            let ((status, answered), current) = first
            func path(_ file: String) -> String {
                guard let musicDirectory, !file.contains("://") else { return file }
                return musicDirectory + (musicDirectory.hasSuffix("/") ? "" : "/") + file
            }
            let state = status["state"]
            let loaded = state == "play" || state == "pause"
            let volume = status["volume"].flatMap(Double.init).flatMap { $0 >= 0 ? $0 : nil }
            let roundTrip = Double((answered - asked).nanoseconds) / 1e9
            return PlaybackState(
                uri: loaded ? current["file"].map(path) : nil,
                title: loaded ? current["Title"] : nil,
                position: loaded ? status["elapsed"].flatMap(Double.init) : nil,
                duration: loaded ? status["duration"].flatMap(Double.init) : nil,
                paused: state != "play",
                rate: 1,
                volume: volume,
                queue: queue.filter { $0.key == "file" }.map { path($0.value) },
                index: status["song"].flatMap { Int($0) },
                at: askedAt.addingTimeInterval(roundTrip / 2))
        }
    }
}
