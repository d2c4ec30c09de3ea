import BatonCore
import Foundation
import NIOCore

extension MPVConnection {
    /// What mpv is doing, read from its properties in one round of requests (sent together,
    /// answered in turn), each within `timeout` (nil: ``callTimeout``). A property mpv calls unavailable (nothing
    /// loaded) is left out; any other failure fails the whole reading.
    public func state(timeout: TimeAmount? = nil) -> EventLoopFuture<PlaybackState> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.state(timeout: timeout) }
        }
        let askedAt = Date()
        let asked = NIODeadline.now()
        let names = ["path", "media-title", "duration", "pause", "speed", "volume", "playlist", "playlist-pos"]
        let position = optionalProperty("time-pos", timeout: timeout).map { ($0, NIODeadline.now()) }
        let readings = names.map { optionalProperty($0, timeout: timeout) }
        return EventLoopFuture.whenAllSucceed(readings, on: eventLoop).and(position).map { values, position in
            let value = Dictionary(uniqueKeysWithValues: zip(names, values))
            let queue = value["playlist"]??.arrayValue?.compactMap { $0["filename"]?.stringValue } ?? []
            let index = value["playlist-pos"]??.intValue.flatMap { $0 >= 0 ? Int($0) : nil }
            let roundTrip = Double((position.1 - asked).nanoseconds) / 1e9
            return PlaybackState(
                uri: value["path"]??.stringValue,
                title: value["media-title"]??.stringValue,
                position: position.0?.doubleValue,
                duration: value["duration"]??.doubleValue,
                paused: (value["pause"]??.boolValue ?? true) || value["path"]??.stringValue == nil,
                rate: value["speed"]??.doubleValue ?? 1,
                volume: value["volume"]??.doubleValue,
                queue: queue,
                index: index,
                at: askedAt.addingTimeInterval(roundTrip / 2))
        }
    }

    /// Property `name`, or nil when mpv says it is unavailable.
    private func optionalProperty(_ name: String, timeout: TimeAmount?) -> EventLoopFuture<JSON?> {
        property(name, timeout: timeout).map { Optional($0) }.flatMapErrorThrowing { error in
            if case MPVError.failed("property unavailable") = error { return nil }
            throw error
        }
    }
}
