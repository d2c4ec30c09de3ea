import NIOCore

/// What the responder and the browser need from the network: ``MDNSTransport`` over real
/// sockets, or an in-memory fake in tests.
///
/// Everything but ``eventLoop`` is called on the event loop only, and listeners are called on it.
package protocol MDNSMessageTransport: AnyObject, Sendable {
    /// The loop the transport and its users run on.
    var eventLoop: any EventLoop { get }
    /// The interfaces in use now.
    var interfaces: [MDNSInterface] { get }
    /// Sends `message`; the future succeeds once every datagram is handed to the system, or
    /// failed to be (a failure is logged and counted, not reported, as mDNS never retries a
    /// single packet).
    @discardableResult
    func send(_ message: DNSMessage, to destination: MDNSDestination) -> EventLoopFuture<Void>
    /// Multicasts `message`, a query, on every interface in use from a socket of its own on an
    /// ephemeral port: a one-shot "legacy unicast" query (RFC 6762 §5.1), which responders answer
    /// at once by unicast to that port (§6.7). `onResponse` gets each response carrying the
    /// query's ID that arrives within `duration`; then the socket closes, and the future succeeds.
    @discardableResult
    func sendOneShotQuery(
        _ message: DNSMessage, listeningFor duration: TimeAmount,
        onResponse: @escaping (MDNSReceivedMessage) -> Void
    ) -> EventLoopFuture<Void>
    /// Calls `listener` for every event from now on, until ``removeListener(_:)``.
    func addListener(_ listener: @escaping (MDNSTransportEvent) -> Void) -> MDNSListenerID
    /// Stops calling the listener; unknown IDs are ignored.
    func removeListener(_ id: MDNSListenerID)
}

