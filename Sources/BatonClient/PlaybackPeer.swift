import BatonCore
import Foundation
import NIOCore

/// One end of a handoff: a channel to a device's `baton.playback`, and what its replies say
/// about the device's clock. Players date what they read (`at`) by their own device's clock;
/// each short request tells how far that clock is from ours (its date against the middle of
/// the round trip), and the request with the shortest round trip is believed.
final class PlaybackPeer: @unchecked Sendable {
    /// `source` or `target`, for details.
    let role: String
    let channel: AppServiceConnection
    /// Their clock minus ours, seconds, and the round trip it was measured over.
    private(set) var offset: (seconds: Double, roundTrip: Double)?

    init(role: String, channel: AppServiceConnection) {
        self.role = role
        self.channel = channel
    }

    /// What a request came back with.
    enum Answer {
        case reply(ValueDictionary, sent: Date, received: Date)
        /// The service said the player failed (`error` in the reply).
        case failed(PlaybackFailure)
        /// The request got no reply: the reply that took its place (its status, why in
        /// words, and why typed).
        case unanswered(ServiceReply)
    }

    /// Sends `command`, waiting `timeout` at most.
    func call(_ command: PlaybackCommand, timeout: TimeAmount) async -> Answer {
        let sent = Date()
        let reply = await channel.send(command.message, timeout: timeout)
        let received = Date()
        guard reply.status == .success, let message = reply.message else {
            return .unanswered(reply)
        }
        if let failure = PlaybackFailure(message: message) { return .failed(failure) }
        return .reply(message, sent: sent, received: received)
    }

    /// Learns the clock offset from a short request's reply dated `at`.
    func learn(at: Date, sent: Date, received: Date) {
        let roundTrip = received.timeIntervalSince(sent)
        guard offset.map({ roundTrip < $0.roundTrip }) ?? true else { return }
        let middle = sent.addingTimeInterval(roundTrip / 2)
        offset = (at.timeIntervalSince(middle), roundTrip)
    }

    /// `date` of their clock, on ours.
    func local(_ date: Date) -> Date {
        date.addingTimeInterval(-(offset?.seconds ?? 0))
    }

    /// `line`, read on their clock, on ours.
    func local(_ line: PositionLine) -> PositionLine {
        line.shifted(by: -(offset?.seconds ?? 0))
    }

    /// Half the shortest round trip seen: how long a request takes to reach them.
    var transit: Double { (offset?.roundTrip ?? 0) / 2 }
}
