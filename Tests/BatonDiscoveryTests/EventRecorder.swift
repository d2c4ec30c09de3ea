import BatonDiscovery
import NIOConcurrencyHelpers

/// Collects a browser's events from its `onEvent` handler, with when each came.
final class EventRecorder: Sendable {
    private let box = NIOLockedValueBox<[(event: MDNSBrowser.Event, time: ContinuousClock.Instant)]>([])

    var events: [MDNSBrowser.Event] { box.withLockedValue { $0.map(\.event) } }

    var eventsWithTimes: [(event: MDNSBrowser.Event, time: ContinuousClock.Instant)] { box.withLockedValue { $0 } }

    func record(_ event: MDNSBrowser.Event) {
        let now = ContinuousClock.now
        box.withLockedValue { $0.append((event, now)) }
    }

    /// The events so far, forgetting them.
    func take() -> [MDNSBrowser.Event] {
        box.withLockedValue { events in
            defer { events = [] }
            return events.map(\.event)
        }
    }

    /// The first event so far that `predicate` accepts, and when it came; waits for one for up
    /// to `timeout` (real time).
    func waitFor(
        _ timeout: Duration = .seconds(10), _ predicate: (MDNSBrowser.Event) -> Bool
    ) async throws -> (event: MDNSBrowser.Event, time: ContinuousClock.Instant) {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = box.withLockedValue({ $0.first { predicate($0.event) } }) {
                return found
            }
            guard ContinuousClock.now < deadline else { throw TestNetwork.TimedOut() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

extension MDNSBrowser.Event {
    /// The service of an `added` event.
    var added: MDNSService? {
        if case .added(let service) = self { service } else { nil }
    }

    /// The instance name and reason of a `removed` event.
    var removed: (String, MDNSBrowser.RemovalReason)? {
        if case .removed(let name, let reason) = self { (name, reason) } else { nil }
    }
}
