import NIOConcurrencyHelpers
import NIOCore

/// Items handed from one event loop to another in batches: the first item posted while the box
/// is empty queues one task on the receiving loop, which takes every item posted until it runs.
/// Posted on the sending loop, that task is queued once the sender's current work is done (the
/// frames of one read, the providers of one batch), so the batch is whole when it crosses.
///
/// The agent's two loops (connections on one, Lua on the other) hand each other every request
/// and its answer. One task a request would wake the other thread for each, and write each
/// answer in a syscall of its own; one task a batch lets 64 pipelined requests cross in a wake-up
/// each way, and their answers leave in one write.
final class LoopMailbox<Item>: @unchecked Sendable {
    private let loop: any EventLoop
    private let sender: any EventLoop
    private let lock = NIOLock()
    /// Guarded by `lock`.
    private var items: [Item] = []
    /// The batch being handed over, kept for its storage; touched on `loop` only.
    private var taken: [Item] = []
    private let deliver: (Item) -> Void

    /// `deliver` is called on `loop`, once for each item, in the order they were posted; items
    /// are usually posted on `sender`.
    init(to loop: any EventLoop, from sender: any EventLoop, deliver: @escaping (Item) -> Void) {
        self.loop = loop
        self.sender = sender
        self.deliver = deliver
    }

    /// Hands `item` to the loop. Call from any thread.
    func post(_ item: Item) {
        let first = lock.withLock {
            items.append(item)
            return items.count == 1
        }
        guard first else { return }
        if sender.inEventLoop, sender !== loop {
            sender.execute { self.loop.execute { self.drain() } }
        } else {
            loop.execute { self.drain() }
        }
    }

    private func drain() {
        lock.withLock { swap(&items, &taken) }
        for item in taken { deliver(item) }
        taken.removeAll(keepingCapacity: true)
    }
}
