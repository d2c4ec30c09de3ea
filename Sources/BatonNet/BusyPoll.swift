import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Keeps an event loop polling its busy sockets, instead of sleeping in `epoll_wait`, for a
/// short while after each burst of traffic.
///
/// An idle CPU takes tens of microseconds to wake for a packet (a deep C-state on hardware, a
/// halted vCPU in a virtual machine): more than Baton spends on a request. A peer that has just
/// sent a request expects its answer, and an agent that has just answered usually gets the next
/// request, within that time; polling for it keeps the CPU awake and the round trip short. This
/// is Linux's `net.core.busy_poll` for sockets it does not cover (loopback, LAN sockets without
/// NAPI polling).
///
/// While connections had traffic in the last `window`, the poller keeps one task queued on the
/// loop. That task asks `poll(2)`, without waiting, whether any of their sockets is ready: when
/// one is, it lets the loop's tick end, and `epoll_wait` returns at once with the bytes; when
/// none is, it queues itself again (NIO runs queued tasks before it looks at its sockets).
/// Other sockets of the loop wait at most `window`; tasks queued from other threads and timers
/// run as usual. An idle loop costs nothing; a busy one at most `window` of CPU after its last
/// packet.
///
/// Polling pays only when the peer can answer meanwhile. When it cannot (the traffic paused, or
/// the peer waits for the very CPU this loop polls on, on a crowded machine, where polling made
/// round trips 5× slower), the poll ends with nothing: the poller then sleeps through the next
/// bursts, twice as many each time, up to ``maximumBackoff``; a poll that finds bytes starts
/// the count over.
final class BusyPoll: @unchecked Sendable {
    // Everything below is touched only on `loop`. Strong, never weak: a weak reference gives the
    // loop a side table, and every retain of it (each promise, each context that holds it) then
    // takes the slow path, which cost 4% of pipelined requests. The poller lives in its loop
    // thread's own storage, so nothing keeps a loop whose thread has ended.
    private let loop: any EventLoop
    private let window: UInt64
    /// Sockets with traffic in the last `window`, and when their window ends (ns, monotonic).
    private var hot: [Int32: UInt64] = [:]
    private var polled: [pollfd] = []
    private var polling = false
    /// Bursts of traffic still to sleep through without polling, and how many the next
    /// fruitless poll makes that.
    private var skipping = 0
    private var backoff = 0
    private var task: (@Sendable () -> Void)!

    private init(loop: any EventLoop, window: TimeAmount) {
        self.loop = loop
        self.window = UInt64(window.nanoseconds)
        task = { [unowned self] in poll() }
    }

    /// Itself while its task is queued, so that the task never outlives it.
    private var queued: BusyPoll?

    /// Traffic just went through socket `descriptor`: keep polling it for `window` from now.
    func activity(on descriptor: Int32) {
        loop.preconditionInEventLoop()
        hot[descriptor] = NIODeadline.now().uptimeNanoseconds &+ window
        guard !polling else { return }
        if skipping > 0 {
            skipping -= 1
            return
        }
        polling = true
        queued = self
        loop.execute(task)
    }

    /// Whether the poller's task is queued (for tests).
    var isPolling: Bool { polling }

    /// Socket `descriptor` is closing: never poll it again (its number may be reused).
    func forget(_ descriptor: Int32) {
        hot[descriptor] = nil
    }

    private func poll() {
        let now = NIODeadline.now().uptimeNanoseconds
        polled.removeAll(keepingCapacity: true)
        for (descriptor, until) in hot {
            if until <= now {
                hot[descriptor] = nil
            } else {
                polled.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0))
            }
        }
        guard !polled.isEmpty else {
            // Nothing came within the window: the traffic has paused, or the peer cannot run
            // while this loop holds the CPU they share. Either way polling did not pay; sleep
            // through the next bursts (1, 2, 4, ... 1024 of them) before trying again.
            polling = false
            backoff = min(max(backoff * 2, 1), Self.maximumBackoff)
            skipping = backoff
            queued = nil
            return
        }
        let ready = polled.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), 0) }
        if ready != 0 {
            // Ready (or an error, which the loop reports): the loop's epoll_wait returns at once.
            polling = false
            backoff = 0
        } else {
            return loop.execute(task)
        }
        queued = nil
    }

    /// The most bursts slept through between polls: on a crowded machine one fruitless poll in
    /// ~1000 round trips, and polling resumes within a thousand once the machine is quiet.
    static let maximumBackoff = 1024

    /// The poller of the loop whose thread this is.
    private static let current = ThreadSpecificVariable<BusyPoll>()

    /// The loop's poller, shared by its connections; nil when `window` is zero. Called off the
    /// loop, a poller of the caller's own.
    static func on(_ loop: any EventLoop, window: TimeAmount) -> BusyPoll? {
        guard window > .zero else { return nil }
        guard loop.inEventLoop else { return BusyPoll(loop: loop, window: window) }
        // A thread may run one loop after another (embedded loops, in tests).
        if let poller = current.currentValue, poller.loop === loop, poller.window == UInt64(window.nanoseconds) {
            return poller
        }
        let poller = BusyPoll(loop: loop, window: window)
        current.currentValue = poller
        return poller
    }

    /// The descriptor of `channel`'s socket, checked against its addresses; nil when it cannot
    /// be told (then the connection is not polled).
    ///
    /// NIO does not hand out descriptors; its socket channels describe themselves with
    /// `fd=N`. A descriptor is used only if `getsockname`/`getpeername` name the channel's own
    /// addresses, so a changed description costs busy polling, never a wrong socket.
    static func descriptor(of channel: any Channel) -> Int32? {
        guard let descriptor = describedDescriptor(String(describing: channel)),
              let local = channel.localAddress, let remote = channel.remoteAddress,
              address(of: descriptor, getsockname) == local, address(of: descriptor, getpeername) == remote
        else { return nil }
        return descriptor
    }

    /// N in the first `fd=N` of `text`.
    static func describedDescriptor(_ text: String) -> Int32? {
        let bytes = Array(text.utf8), marker = Array("fd=".utf8)
        guard bytes.count > marker.count else { return nil }
        for start in 0...(bytes.count - marker.count) where bytes[start..<start + marker.count].elementsEqual(marker) {
            let digits = bytes[(start + marker.count)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            return digits.isEmpty ? nil : Int32(String(decoding: digits, as: UTF8.self))
        }
        return nil
    }

    private static func address(
        of descriptor: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) }
        }
        guard result == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: storage) { SocketAddress($0.load(as: sockaddr_in.self)) }
        case AF_INET6:
            return withUnsafeBytes(of: storage) { SocketAddress($0.load(as: sockaddr_in6.self)) }
        default:
            return nil
        }
    }
}
