@testable import BatonDiscovery
import NIOCore
import NIOEmbedded

/// An in-memory transport on an `EmbeddedEventLoop`: keeps what is sent, with the virtual time
/// it was sent at, and delivers what a test makes up.
final class FakeTransport: MDNSMessageTransport, @unchecked Sendable {
    struct Sent {
        var message: DNSMessage
        var destination: MDNSDestination
        var time: NIODeadline
    }

    /// A one-shot query: what was asked, when, and where its replies go while it listens.
    struct OneShot {
        var message: DNSMessage
        var time: NIODeadline
        var duration: TimeAmount
        var onResponse: ((MDNSReceivedMessage) -> Void)?
    }

    let loop: EmbeddedEventLoop
    var eventLoop: any EventLoop { loop }
    var interfaces: [MDNSInterface]
    private(set) var sent: [Sent] = []
    private(set) var oneShots: [OneShot] = []
    private var listeners: [Int: (MDNSTransportEvent) -> Void] = [:]
    private var nextID = 0
    let start: NIODeadline

    /// Interface #2 `eth0` with 192.168.1.20, unless others are given.
    init(loop: EmbeddedEventLoop = EmbeddedEventLoop(), interfaces: [MDNSInterface] = [FakeTransport.eth0]) {
        self.loop = loop
        self.interfaces = interfaces
        self.start = loop.now
    }

    static let eth0 = MDNSInterface(index: 2, name: "eth0", ipv4Addresses: [[192, 168, 1, 20]])

    /// A peer on the link, port 5353.
    static let peer = try! SocketAddress(ipAddress: "192.168.1.99", port: 5353)

    func send(_ message: DNSMessage, to destination: MDNSDestination) -> EventLoopFuture<Void> {
        sent.append(Sent(message: message, destination: destination, time: loop.now))
        return loop.makeSucceededVoidFuture()
    }

    func sendOneShotQuery(
        _ message: DNSMessage, listeningFor duration: TimeAmount, onResponse: @escaping (MDNSReceivedMessage) -> Void
    ) -> EventLoopFuture<Void> {
        let index = oneShots.count
        oneShots.append(OneShot(message: message, time: loop.now, duration: duration, onResponse: onResponse))
        // Closes when the time is up, as the real one does.
        return loop.scheduleTask(in: duration) { [self] in oneShots[index].onResponse = nil }.futureResult
    }

    /// Delivers `message` to the asker of the `index`th one-shot query, if it still listens, as a
    /// unicast reply from `source` on interface #2 over IPv4. Returns whether it still listened.
    @discardableResult
    func replyToOneShot(
        _ message: DNSMessage, query index: Int = 0, from source: SocketAddress = FakeTransport.peer,
        interfaceIndex: Int? = 2, family: MDNSAddressFamily = .ipv4
    ) -> Bool {
        // The transport hands on only replies echoing the query's ID.
        guard let onResponse = oneShots[index].onResponse, message.id == oneShots[index].message.id else { return false }
        onResponse(
            MDNSReceivedMessage(
                message: message, source: source, interfaceIndex: interfaceIndex, family: family, wasMulticast: false))
        return true
    }

    func addListener(_ listener: @escaping (MDNSTransportEvent) -> Void) -> MDNSListenerID {
        nextID += 1
        listeners[nextID] = listener
        return MDNSListenerID(rawValue: nextID)
    }

    func removeListener(_ id: MDNSListenerID) {
        listeners[id.rawValue] = nil
    }

    var listenerCount: Int { listeners.count }

    /// Delivers `message` as if it arrived from `source` on interface #2 over IPv4.
    func deliver(
        _ message: DNSMessage, from source: SocketAddress = FakeTransport.peer, interfaceIndex: Int? = 2,
        family: MDNSAddressFamily = .ipv4, multicast: Bool = true
    ) {
        emit(
            .message(
                MDNSReceivedMessage(
                    message: message, source: source, interfaceIndex: interfaceIndex, family: family,
                    wasMulticast: multicast)))
    }

    func emit(_ event: MDNSTransportEvent) {
        for (_, listener) in listeners.sorted(by: { $0.key < $1.key }) {
            listener(event)
        }
    }

    /// Forgets what was sent so far.
    func clearSent() {
        sent = []
    }

    /// Milliseconds since the transport was made, for each message sent.
    var sentTimes: [Int64] {
        sent.map { ($0.time - start).nanoseconds / 1_000_000 }
    }

    /// Advances virtual time by `milliseconds`, running what falls due.
    func advance(_ milliseconds: Int64) {
        loop.advanceTime(by: .milliseconds(milliseconds))
    }
}
