import BatonNet
import BatonWire
import BatonSecurity
import Logging
import NIOCore

/// An agent's links through the broker: every sealed hello on its inbox that the account's
/// trust rules let in becomes a link served by the agent's ``ServingPolicy``, as a TCP caller
/// would be (a device of another account is `anonymous`; a revoked one is refused). Hellos are
/// limited per sender and in all, since each costs a signature check and a key agreement.
public final class BrokerListener: LinkListener, @unchecked Sendable {
    let hub: BrokerHub
    private let limits: FrameLimits
    private let logger: Logger
    private var policy: ServingPolicy?
    private var accepting = false
    private var budget = HelloBudget()

    /// A listener on `hub` (an agent's: role ``BrokerHub/Role/agent``), which must run on the
    /// serving policy's loop; frames up to `limits`.
    public init(hub: BrokerHub, limits: FrameLimits = FrameLimits(), logger: Logger) {
        self.hub = hub
        self.limits = limits
        self.logger = logger
    }

    public func start(policy: ServingPolicy) -> EventLoopFuture<Void> {
        guard policy.eventLoop === hub.eventLoop else {
            return policy.eventLoop.makeFailedFuture(BrokerLinkError.refused("the broker connection runs on another event loop than the agent's server"))
        }
        self.policy = policy
        accepting = true
        hub.helloHandler = { [weak self] envelope, replyTo in self?.hello(envelope, replyTo: replyTo) }
        return hub.start()
    }

    public func stopAccepting() -> EventLoopFuture<Void> {
        hub.eventLoop.submit { [self] in
            accepting = false
            hub.helloHandler = nil
        }
    }

    /// The hub is the agent's to stop (its presence goes through it too).
    public func shutdown() -> EventLoopFuture<Void> {
        hub.eventLoop.makeSucceededVoidFuture()
    }

    private func hello(_ envelope: BrokerEnvelope, replyTo: String) {
        guard accepting, let policy else { return }
        // The reply goes to the sender's own inbox, nowhere else a stranger might name.
        guard replyTo.hasPrefix(hub.topics.root + envelope.sender + "/in/") else { return }
        guard budget.take(envelope.sender, now: hub.eventLoop.now) else {
            policy.noteRefused(origin: "broker:" + envelope.sender, "too many hellos through the broker")
            return
        }
        do throws(SealError) {
            let (reply, session, peer) = try SealResponder.respond(
                to: Array(envelope.body.readableBytesView), credentials: hub.credentials, trust: hub.trustStore.trust)
            guard session.peerDeviceID == envelope.sender else {
                throw SealError.malformed("the hello's sender is not the message's")
            }
            let link = BrokerLink.responding(
                to: envelope, session: session, replyTo: replyTo, hub: hub, limits: limits, logger: logger)
            link.session = policy.serve(link, origin: "broker:" + envelope.sender)
            link.startResponding(reply: reply, peer: peer)
        } catch {
            policy.noteRefused(origin: "broker:" + envelope.sender, "a sealed hello: \(error)")
            var body = ByteBuffer()
            body.writeString(error.description)
            _ = hub.send(
                BrokerEnvelope(kind: .refusal, sessionID: envelope.sessionID, sender: hub.deviceID, body: body), to: replyTo,
                expiry: BrokerLink.messageLifetime)
        }
    }
}

/// Hellos let through: 20 a second in all, 5 a second from one sender (bursts of twice that).
struct HelloBudget {
    private var total = TokenBucket(rate: 20, burst: 40)
    private var bySender: [String: TokenBucket] = [:]

    mutating func take(_ sender: String, now: NIODeadline) -> Bool {
        if bySender.count > 4096 { bySender = bySender.filter { !$0.value.isFull(now: now) } }
        var bucket = bySender[sender] ?? TokenBucket(rate: 5, burst: 10)
        guard bucket.take(now: now) else { return false }
        bySender[sender] = bucket
        return total.take(now: now)
    }
}

/// Tokens refilled at `rate` a second up to `burst`.
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: NIODeadline?

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
    }

    private func level(now: NIODeadline) -> Double {
        guard let last else { return tokens }
        return min(burst, tokens + Double((now - last).nanoseconds) / 1e9 * rate)
    }

    func isFull(now: NIODeadline) -> Bool { level(now: now) >= burst }

    mutating func take(now: NIODeadline) -> Bool {
        tokens = level(now: now)
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
