import BatonCore
import BatonNet
import BatonSecurity
import BatonWire
import Logging
import NIOCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A ``Link`` through the account's broker: one session's frames, sealed per message
/// (``SealedSession``: keys from a signed X25519 handshake, AEAD with counters and a replay
/// window), published QoS 1 to the peer's inbox. The contract is ``Link``'s: identity first
/// (from the sealed handshake, judged by the same rules as TLS), every frame once and in order
/// (MQTT may deliver a message twice after a reconnect: copies are dropped by their counter,
/// and one that comes early waits for those before it), one end.
///
/// Frames written in one event-loop tick go out sealed in one message (several when they pass
/// ``chunkSize``); the peer reads the plaintext as one stream of frames.
final class BrokerLink: Link, @unchecked Sendable {
    let eventLoop: any EventLoop
    var session: (any LinkSession)?
    let peerDescription: String
    let hub: BrokerHub
    let sessionID: [UInt8]
    let peerID: String
    /// The peer's inbox; the initiator learns it from its route, the responder from the
    /// hello's response topic.
    let destination: String
    private var sealed: SealedSession?
    private var initiator: SealInitiator?
    private let expectation: AgentExpectation
    /// Whether this end dialled (the client's), rather than answered a hello.
    private let dialled: Bool
    private var decoder: FrameDecoder
    private var inbound: ByteBuffer?
    private var outbox: ByteBuffer?
    private var flushScheduled = false
    private var decoding = false
    private var established = false
    private var ended = false
    /// The counter of the next message to deliver, and messages that came before their turn.
    private var expected: UInt64 = 0
    private var early: [UInt64: (kind: UInt8, plaintext: [UInt8])] = [:]
    private var gapTimer: Scheduled<Void>?
    private var receivingPaused = false
    let logger: Logger

    /// Plaintext bytes per sealed message at most.
    static let chunkSize = 256 * 1024
    /// Messages that may wait for an earlier one; more, or a gap older than ``gapDeadline``,
    /// ends the link (QoS 1 loses nothing while the session lasts: a gap means it did not).
    static let earlyLimit = 256
    static let gapDeadline: TimeAmount = .seconds(10)
    /// How long a sealed message is good for, on the broker and at the peer.
    static let messageLifetime: UInt32 = 60

    /// What each sealed message carries.
    enum SealedKind: UInt8 {
        case frames = 1
        case close = 2
    }

    /// What the hub keeps it under: the peer and the session, as a message names them.
    let key: String

    private init(
        hub: BrokerHub, peerID: String, sessionID: [UInt8], destination: String, expectation: AgentExpectation,
        dialled: Bool, limits: FrameLimits, logger: Logger
    ) {
        self.hub = hub
        self.dialled = dialled
        self.eventLoop = hub.eventLoop
        self.peerID = peerID.lowercased()
        self.sessionID = sessionID
        key = peerID.lowercased() + "/" + sessionID.hexDigits
        self.destination = destination
        self.expectation = expectation
        self.peerDescription = "broker:" + peerID.lowercased()
        decoder = FrameDecoder(limits: limits)
        self.logger = logger
    }

    /// The dialling end: a link to `route`'s agent that says its hello at ``start()``.
    static func initiating(
        _ route: BrokerRoute, hub: BrokerHub, expectation: AgentExpectation, limits: FrameLimits, logger: Logger
    ) -> BrokerLink {
        let initiator = SealInitiator(credentials: hub.credentials, to: route.deviceID)
        let link = BrokerLink(
            hub: hub, peerID: route.deviceID, sessionID: initiator.sessionID, destination: hub.topics.agentInbox(route.deviceID),
            expectation: expectation, dialled: true, limits: limits, logger: logger)
        link.initiator = initiator
        return link
    }

    /// The agent's end of a session a hello opened: sealed already, established at ``start()``.
    static func responding(
        to envelope: BrokerEnvelope, session: SealedSession, replyTo: String, hub: BrokerHub, limits: FrameLimits, logger: Logger
    ) -> BrokerLink {
        let link = BrokerLink(
            hub: hub, peerID: envelope.sender, sessionID: envelope.sessionID, destination: replyTo, expectation: .anyAccount,
            dialled: false, limits: limits, logger: logger)
        link.sealed = session
        return link
    }

    /// Sends the hello (initiator), registered with the hub; fails the link at once when the
    /// broker says nobody listens on the agent's inbox.
    func startInitiating() {
        eventLoop.preconditionInEventLoop()
        guard let initiator else { return }
        if hub.hasLeft(peerID) { return offline("its presence on the broker says it left") }
        hub.register(self)
        var body = ByteBuffer()
        body.writeBytes(initiator.hello)
        let envelope = BrokerEnvelope(kind: .hello, sessionID: sessionID, sender: hub.deviceID, body: body)
        hub.ready.flatMap { [self] in
            hub.send(envelope, to: destination, expiry: Self.messageLifetime, replyTo: hub.inbox)
        }.whenComplete { [self] result in
            switch result {
            case .success(let ack) where ack.noMatchingSubscribers:
                offline("nobody listens on its inbox on the broker")
            case .success(let ack) where ack.reasonCode >= 0x80:
                fail(.refused(.refusedByPeer("the broker refused the message (reason \(ack.reasonCode)\(ack.reasonString.map { ": \($0)" } ?? ""))"), logLine: "broker refused a hello"))
            case .success: break
            case .failure(let error): fail(.failed("the broker: \(error)"))
            }
        }
    }

    /// Sends the reply `reply` (responder) and tells the session who the peer is.
    func startResponding(reply: [UInt8], peer: PeerIdentity) {
        eventLoop.preconditionInEventLoop()
        hub.register(self)
        var body = ByteBuffer()
        body.writeBytes(reply)
        _ = hub.send(
            BrokerEnvelope(kind: .reply, sessionID: sessionID, sender: hub.deviceID, body: body), to: destination,
            expiry: Self.messageLifetime)
        establish(peer)
    }

    private func establish(_ peer: PeerIdentity) {
        guard !established, !ended else { return }
        established = true
        session?.linkEstablished(self, peer: peer)
        sendOutbox()
    }

    // MARK: receiving

    /// A message for this link came from the hub.
    func received(_ envelope: BrokerEnvelope) {
        guard !ended else { return }
        switch envelope.kind {
        case .reply:
            guard let initiator, !established else { return } // a copy of the reply
            self.initiator = nil
            do throws(SealError) {
                let (session, peer) = try initiator.finish(
                    reply: Array(envelope.body.readableBytesView), trustStore: hub.trustStore, expecting: expectation)
                sealed = session
                establish(peer)
            } catch {
                fail(.refused(.untrustedPeer(error.description), logLine: "refused the agent's sealed reply: \(error)"))
            }
        case .refusal:
            guard !established else { return }
            let reason = String(buffer: envelope.body)
            fail(.refused(.refusedByPeer(String(reason.prefix(300))), logLine: "refused by the agent: \(reason.prefix(300))"))
        case .sealed:
            guard sealed != nil else { return }
            let message: SealedMessage
            do throws(SealError) {
                message = try sealed!.open(envelope.body.readableBytesView)
            } catch {
                // A copy (QoS 1 after a reconnect) is expected; anything else was not sealed by
                // the peer and is dropped.
                if case .replayed = error { return }
                logger.debug("dropped a message that did not open", metadata: ["peer": "\(peerID)", "why": "\(error)"])
                return
            }
            accept(counter: message.counter, kind: message.kind, plaintext: message.plaintext)
        case .hello:
            return // a copy of the hello that made this link
        }
    }

    private func accept(counter: UInt64, kind: UInt8, plaintext: [UInt8]) {
        guard counter >= expected else { return }
        guard counter == expected else {
            guard early.count < Self.earlyLimit else {
                fail(.protocolError("\(early.count) messages wait for one the broker lost"))
                return
            }
            early[counter] = (kind, plaintext)
            if gapTimer == nil {
                gapTimer = eventLoop.scheduleTask(in: Self.gapDeadline) { [self] in
                    fail(.protocolError("a message from the peer never came (the broker lost it)"))
                }
            }
            return
        }
        handle(kind: kind, plaintext: plaintext)
        expected += 1
        while let next = early.removeValue(forKey: expected) {
            handle(kind: next.kind, plaintext: next.plaintext)
            expected += 1
        }
        if early.isEmpty {
            gapTimer?.cancel()
            gapTimer = nil
        }
    }

    private func handle(kind: UInt8, plaintext: [UInt8]) {
        switch SealedKind(rawValue: kind) {
        case .frames:
            if inbound == nil { inbound = ByteBuffer() }
            inbound!.writeBytes(plaintext)
            if !decoding { deliverFrames(atEnd: false) }
        case .close:
            if !decoding { deliverFrames(atEnd: true) }
            end()
        case nil:
            fail(.protocolError("a sealed message of unknown kind \(kind)"))
        }
    }

    private func deliverFrames(atEnd: Bool) {
        decoding = true
        defer { decoding = false }
        while !ended, !receivingPaused, let session, var buffer = inbound.take() {
            let event: FrameEvent?
            do throws(WireError) {
                event = atEnd ? try decoder.decodeLast(buffer: &buffer, seenEOF: true) : try decoder.decode(buffer: &buffer)
            } catch {
                if case .protocolError(let reason) = error { fail(.protocolError(reason)) } else { fail(.failed("\(error)")) }
                return
            }
            inbound = buffer.readableBytes > 0 ? buffer : nil
            guard let event else { return }
            session.link(self, received: event)
        }
    }

    func pauseReceiving(_ paused: Bool) {
        eventLoop.preconditionInEventLoop()
        receivingPaused = paused
        // The broker cannot be held back per session: what comes meanwhile waits here, bounded
        // by the session's own limits on requests in flight.
        if !paused, inbound != nil, !decoding {
            eventLoop.execute { [self] in if !decoding { deliverFrames(atEnd: false) } }
        }
    }

    // MARK: sending

    func write(limit: Int, _ encode: (inout ByteBuffer, _ limit: Int) throws(WireError) -> Void) -> WireError? {
        eventLoop.preconditionInEventLoop()
        guard !ended else { return .unsendableFrame("not connected") }
        var buffer = outbox ?? ByteBuffer()
        outbox = nil
        do throws(WireError) {
            try encode(&buffer, limit)
        } catch {
            outbox = buffer
            return error
        }
        outbox = buffer
        if !flushScheduled {
            flushScheduled = true
            eventLoop.execute { [self] in
                flushScheduled = false
                sendOutbox()
            }
        }
        return nil
    }

    private func sendOutbox() {
        guard established, sealed != nil, var buffer = outbox, buffer.readableBytes > 0 else { return }
        outbox = nil
        while let chunk = buffer.readBytes(length: min(buffer.readableBytes, Self.chunkSize)), !chunk.isEmpty {
            sendSealed(.frames, chunk)
        }
    }

    private func sendSealed(_ kind: SealedKind, _ plaintext: [UInt8]) {
        let expiry = UInt32(Date().timeIntervalSince1970) + Self.messageLifetime
        var body = ByteBuffer()
        body.writeBytes(sealed!.seal(plaintext, kind: kind.rawValue, expiry: expiry))
        let envelope = BrokerEnvelope(kind: .sealed, sessionID: sessionID, sender: hub.deviceID, body: body)
        hub.send(envelope, to: destination, expiry: Self.messageLifetime).whenSuccess { [self] ack in
            // Nobody on the peer's inbox: the peer left the broker; its session is gone.
            if ack.noMatchingSubscribers { fail(.failed("\(peerID) left the broker")) }
        }
    }

    func close() {
        eventLoop.preconditionInEventLoop()
        guard !ended else { return }
        sendOutbox()
        if established, sealed != nil { sendSealed(.close, []) }
        end()
    }

    // MARK: the end

    private func fail(_ failure: LinkFailure) {
        guard !ended else { return }
        session?.link(self, failed: failure)
        end()
    }

    /// The peer's presence says it left the broker.
    func peerLeft() {
        offline("its presence on the broker says it left")
    }

    /// The peer is not on the broker: for the caller, the device is unavailable (as a refused
    /// TCP connect is), not trouble worth a warning.
    private func offline(_ why: String) {
        let text = "\(peerID) is offline: \(why)"
        fail(dialled ? .refused(.closed(text), logLine: text) : .failed(text))
    }

    /// The hub stopped (the process is ending): the link ends, as a socket closed by its
    /// owner does, with nothing to report.
    func hubStopped() {
        end()
    }

    private func end() {
        guard !ended else { return }
        ended = true
        gapTimer?.cancel()
        gapTimer = nil
        early = [:]
        inbound = nil
        outbox = nil
        hub.remove(self)
        let session = self.session
        self.session = nil
        session?.linkClosed(self)
    }
}
