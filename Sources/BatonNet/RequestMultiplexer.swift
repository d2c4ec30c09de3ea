import BatonCore
import BatonWire
import NIOCore

/// The bookkeeping of many conversations on one connection: this end's requests waiting for
/// their answers, and the app-service channels open on it with whoever serves each. Plain
/// values, no I/O; confined to its connection's loop. It never calls a waiter itself: it hands
/// back the ``Completion``s to run, so that a waiter may send the next request at once.
///
/// Request ids are one space across every kind of request this end sends (the peer's are a
/// space of their own); channel ids are chosen by the side that opens the channel.
package struct RequestMultiplexer {
    /// What a request's waiter is told: the answer, or why there is none.
    package typealias Waiter = (Result<Frame, PeerConnectionError>) -> Void

    /// Who waits for an answer: for the frame, or (a ServiceRequest's sender) for the reply it
    /// carries or the status that takes its place. The second spares a closure per request.
    package enum Recipient {
        case frame(Waiter)
        case reply((ServiceReply) -> Void)
    }

    /// A waiter and what to tell it; run it once the multiplexer is left.
    package struct Completion {
        let recipient: Recipient
        let result: Result<Frame, PeerConnectionError>

        package func run() {
            switch recipient {
            case .frame(let waiter): waiter(result)
            case .reply(let waiter): waiter(ServiceReply(answering: result))
            }
        }
    }

    /// Who waits for an answer, on which channel (for a ServiceRequest), and until when (the
    /// wait it was given, for the words of a timeout).
    private struct Pending {
        let channel: UInt64?
        let deadline: NIODeadline
        let timeout: TimeAmount
        let recipient: Recipient
    }

    private var nextRequestID: UInt64 = 1
    private var nextChannelID: UInt64 = 1
    private var pending: [UInt64: Pending] = [:]
    private var channels: [UInt64: any ServiceChannelHandler] = [:]

    package init() {}

    // MARK: requests

    /// A fresh id for a request of this end.
    package mutating func makeRequestID() -> UInt64 {
        defer { nextRequestID += 1 }
        return nextRequestID
    }

    /// A fresh id for a channel this end opens.
    package mutating func makeChannelID() -> UInt64 {
        defer { nextChannelID += 1 }
        return nextChannelID
    }

    /// Waits for the answer to request `id` (on `channel`, for a ServiceRequest) until
    /// `deadline`.
    package mutating func await(
        _ id: UInt64, channel: UInt64? = nil, until deadline: NIODeadline, timeout: TimeAmount, _ waiter: @escaping Waiter
    ) {
        self.await(id, channel: channel, until: deadline, timeout: timeout, .frame(waiter))
    }

    /// As the `await` above, for any recipient.
    package mutating func await(_ id: UInt64, channel: UInt64? = nil, until deadline: NIODeadline, timeout: TimeAmount, _ recipient: Recipient) {
        pending[id] = Pending(channel: channel, deadline: deadline, timeout: timeout, recipient: recipient)
    }

    /// Stops waiting for every request whose deadline is past at `now`: their waiters, to be
    /// told ``PeerConnectionError/timedOut(_:)``.
    package mutating func expire(at now: NIODeadline) -> [Completion] {
        var completions: [Completion] = []
        for (id, entry) in pending where entry.deadline <= now {
            pending[id] = nil
            completions.append(Completion(recipient: entry.recipient, result: .failure(Self.timedOut(entry))))
        }
        return completions
    }

    /// The earliest deadline of a request still waiting.
    package var earliestDeadline: NIODeadline? {
        pending.values.lazy.map(\.deadline).min()
    }

    /// Who waits for `response`, which arrived at `now`, with it; nil when nobody does. An
    /// answer that comes after its request's deadline (the receiver's own timeout answer, say)
    /// is taken as the timeout, in this end's words, as the protocol says.
    package mutating func complete(_ response: Frame, at now: NIODeadline) -> Completion? {
        guard let id = response.requestID, let entry = pending.removeValue(forKey: id) else { return nil }
        guard now < entry.deadline else {
            return Completion(recipient: entry.recipient, result: .failure(Self.timedOut(entry)))
        }
        return Completion(recipient: entry.recipient, result: .success(response))
    }

    private static func timedOut(_ entry: Pending) -> PeerConnectionError {
        .timedOut("timed out: no answer within \(entry.timeout.words)")
    }

    /// Stops waiting for request `id`: its waiter, to be told `error`; nil when nobody waited.
    package mutating func abandon(_ id: UInt64, _ error: PeerConnectionError) -> Completion? {
        guard let entry = pending.removeValue(forKey: id) else { return nil }
        return Completion(recipient: entry.recipient, result: .failure(error))
    }

    /// How many requests wait for their answers.
    package var pendingCount: Int { pending.count }

    // MARK: channels

    /// Whether channel `id` is open.
    package func isOpen(_ id: UInt64) -> Bool { channels[id] != nil }

    /// How many channels are open.
    package var channelCount: Int { channels.count }

    /// Who serves channel `id`, if it is open.
    package func handler(of id: UInt64) -> (any ServiceChannelHandler)? { channels[id] }

    /// Channel `id` is open, served by `handler`.
    package mutating func open(_ id: UInt64, handler: any ServiceChannelHandler) {
        channels[id] = handler
    }

    /// Channel `id` closed: its handler (nil if it was not open), and the requests of this end
    /// still waiting on it, answered `app_service_connection_closed` as the protocol says.
    package mutating func close(_ id: UInt64) -> (handler: any ServiceChannelHandler, completions: [Completion])? {
        guard let handler = channels.removeValue(forKey: id) else { return nil }
        var completions: [Completion] = []
        for (requestID, entry) in pending where entry.channel == id {
            pending[requestID] = nil
            completions.append(Completion(recipient: entry.recipient, result: .success(.serviceResponse(
                channelID: id, requestID: requestID,
                reply: ServiceReply(status: .appServiceConnectionClosed, detail: "the channel closed before the answer came")))))
        }
        return (handler, completions)
    }

    // MARK: the end

    /// The connection is gone: every waiter, to be told `error`, and the channels that were
    /// open, in id order, for their handlers to hear they closed.
    package mutating func fail(_ error: PeerConnectionError) -> (completions: [Completion], channels: [(id: UInt64, handler: any ServiceChannelHandler)]) {
        let completions = pending.values.map { Completion(recipient: $0.recipient, result: .failure(error)) }
        pending = [:]
        let open = channels.sorted { $0.key < $1.key }.map { (id: $0.key, handler: $0.value) }
        channels = [:]
        return (completions, open)
    }
}
