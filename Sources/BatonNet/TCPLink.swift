import BatonSecurity
import BatonWire
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// A ``Link`` over one TCP connection: mutual TLS 1.3 (``ConnectionSecurity/tls(_:)``) or
/// plaintext between loopback addresses, framed by ``FrameDecoder``. It is the last handler of
/// the channel's pipeline (after `NIOSSLHandler` on a TLS link), cuts the bytes into frames
/// itself, and judges the peer's certificate chain in the TLS handshake with ``PeerTrust``.
///
/// It frames the bytes itself rather than through `ByteToMessageHandler`: each frame would
/// otherwise cross the pipeline boxed in an `NIOAny` and be cast back, which cost a fifth of
/// the pipelined throughput.
///
/// Frames written in one event-loop tick go out in one write (answers to a batch of pipelined
/// requests cost one system call), or as soon as 4 KiB wait; after traffic, the loop keeps
/// polling the socket for a while instead of sleeping (``BusyPoll``).
///
/// Backpressure: it stops reading (NIO's read demand) while its unsent bytes are past the
/// channel's high-water mark or its session says it is busy, and goes on when they drain.
public final class TCPLink: ChannelDuplexHandler, Link, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    public let eventLoop: any EventLoop
    public var session: (any LinkSession)?
    private let role: PeerConnection.Role
    private let secure: Bool
    private var context: ChannelHandlerContext?
    /// The channel it is installed on, until it is removed: for tests that check it is let go.
    /// Read through the context, not kept weakly: a weak reference gives the channel a side
    /// table, and every retain and release of it (NIO makes many a read) the slow path.
    var channel: (any Channel)? { context?.channel }
    private var remoteAddress: SocketAddress?
    /// Who the peer proved to be in the TLS handshake, or why it was refused.
    private var identity: PeerIdentity?
    private var refusal: String?
    private var active = false
    private var established = false
    private var failed = false
    private var decoder: FrameDecoder
    /// Bytes read and not yet framed.
    private var inbound: ByteBuffer?
    /// Whether frames are being handed to the session: bytes that arrive meanwhile (the session
    /// can make the channel read) wait for the loop that is already running.
    private var decoding = false
    /// Frames written and not yet flushed.
    private var outbox: ByteBuffer?
    /// Backpressure: the session asked for no more frames for now (it serves as many of the
    /// peer's requests as it will at once), or what this end wrote waits unsent past the
    /// channel's high-water mark (a peer that does not read). Either way the link neither hands
    /// over frames nor reads from the socket until it clears: a peer cannot make this end
    /// buffer without bound.
    private var sessionBusy = false
    /// A read the channel asked for while held back, made once the hold ends.
    private var readHeld = false
    private var flushScheduled = false
    private let busyPoll: BusyPoll?
    /// The socket's descriptor, for ``busyPoll``; nil when not polled.
    private var socketDescriptor: Int32?

    /// Frames waiting in the outbox past this many bytes are flushed before the tick ends.
    /// Measured with 64 requests in flight: flushing only at the end of each batch makes the
    /// two ends take turns (~150k msg/s); 4 KiB lets them overlap (~300k msg/s).
    static let flushThreshold = 4096

    private init(role: PeerConnection.Role, eventLoop: any EventLoop, secure: Bool, limits: FrameLimits, busyPoll window: TimeAmount) {
        self.role = role
        self.eventLoop = eventLoop
        self.secure = secure
        decoder = FrameDecoder(limits: limits)
        busyPoll = BusyPoll.on(eventLoop, window: window)
    }

    /// A link on `channel`, its handlers added to the pipeline: TLS as `security` says (an
    /// agent judging callers, a client checking the agent against `expectation`), then the link,
    /// which reads frames up to this end's `limits`; `makeSession` makes its session before
    /// anything can reach it. Call from the channel's initializer.
    static func install<Session: LinkSession>(
        on channel: any Channel, role: PeerConnection.Role, security: ConnectionSecurity, expectation: PeerExpectation,
        limits: FrameLimits, busyPoll: TimeAmount, makeSession: (TCPLink) -> Session
    ) throws -> Session {
        let link = TCPLink(
            role: role, eventLoop: channel.eventLoop, secure: security.trustStore != nil, limits: limits, busyPoll: busyPoll)
        let session = makeSession(link)
        link.session = session
        let pipeline = channel.pipeline.syncOperations
        if case .tls(let identity) = security {
            switch role {
            case .server:
                try pipeline.addHandler(NIOSSLServerHandler(
                    context: identity.serverContext,
                    customVerificationCallback: { certificates, promise in
                        link.judge(certificates) { try identity.trustStore.trust.classifyCaller(chain: $0) }
                        promise.succeed(link.refusal == nil ? .certificateVerified : .failed)
                    }))
            case .client:
                try pipeline.addHandler(try NIOSSLClientHandler(
                    context: identity.clientContext, serverHostname: nil,
                    customVerificationCallback: { certificates, promise in
                        link.judge(certificates) {
                            // What the source claimed gives way to what earlier handshakes proved.
                            let known = identity.trustStore.known
                            let account = try known.expectation(for: expectation.deviceID, claimed: expectation.account)
                            let agent = try identity.trustStore.trust.verifyAgent(
                                chain: $0, deviceID: expectation.deviceID, expecting: account)
                            try known.check(agent)
                            return agent
                        }
                        promise.succeed(link.refusal == nil ? .certificateVerified : .failed)
                    }))
            }
        }
        try pipeline.addHandler(link)
        return session
    }

    /// In the TLS handshake: who the peer is, as `decide` finds from its chain, or why it is
    /// refused.
    private func judge(_ certificates: [NIOSSLCertificate], _ decide: ([[UInt8]]) throws -> PeerIdentity) {
        do {
            identity = try decide(certificates.map { try $0.toDERBytes() })
        } catch {
            refusal = "\(error)"
        }
    }

    public var peerDescription: String { remoteAddress?.description ?? "?" }

    // MARK: channel events

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        remoteAddress = context.channel.remoteAddress
        if context.channel.isActive { activate(context) }
    }

    /// The pipeline is torn down: let go of the context, which holds this handler (a cycle
    /// that kept every connection's link and buffers alive after it closed).
    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // A channel that never became active (a connect that failed) has no channelInactive:
        // its session hears of the end here.
        let session = self.session
        self.session = nil
        session?.linkClosed(self)
    }

    public func channelActive(context: ChannelHandlerContext) {
        activate(context)
        context.fireChannelActive()
    }

    private func activate(_ context: ChannelHandlerContext) {
        guard !active else { return }
        active = true
        remoteAddress = context.channel.remoteAddress
        if busyPoll != nil { socketDescriptor = BusyPoll.descriptor(of: context.channel) }
        // Plaintext, between loopback addresses: nothing to prove, and only this machine's
        // processes can reach it.
        if !secure { establish(PeerIdentity(authorization: .sameAccount, deviceID: nil, account: nil)) }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent, let identity { establish(identity) }
        context.fireUserInboundEventTriggered(event)
    }

    private func establish(_ peer: PeerIdentity) {
        guard !established else { return }
        established = true
        session?.linkEstablished(self, peer: peer)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        trafficSeen()
        var bytes = unwrapInboundIn(data)
        if var buffer = inbound.take(), buffer.readableBytes > 0 {
            // Room is made at the front once the frames read take more than half the buffer.
            if buffer.readerIndex > 4096, buffer.readerIndex > buffer.capacity / 2 { buffer.discardReadBytes() }
            buffer.writeBuffer(&bytes)
            inbound = buffer
        } else {
            inbound = bytes
        }
        if !decoding { deliverFrames(atEnd: false) }
    }

    /// Hands the session every whole frame read, in order, until it or the link is gone; at the
    /// end of the stream, an unfinished frame is a protocol error.
    private func deliverFrames(atEnd: Bool) {
        decoding = true
        defer { decoding = false }
        while !failed, !heldBack, let session, var buffer = inbound.take() {
            let event: FrameEvent?
            do throws(WireError) {
                event = atEnd ? try decoder.decodeLast(buffer: &buffer, seenEOF: true) : try decoder.decode(buffer: &buffer)
            } catch {
                fail(error)
                return
            }
            // Nothing left: let the buffer go, so that whoever read it (NIO's receive buffer,
            // NIOSSL's plaintext) reuses it rather than copying it for the next read.
            inbound = buffer.readableBytes > 0 ? buffer : nil
            guard let event else { return }
            session.link(self, received: event)
        }
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
    }

    private func fail(_ error: any Error) {
        guard !failed else { return }
        // A peer that went away after the handshake without TLS's close_notify (many do) has
        // simply gone: the close tells the session, and nothing is logged as trouble.
        if established, case .uncleanShutdown? = error as? NIOSSLError {
            close()
            return
        }
        failed = true
        if let wire = error as? WireError, case .protocolError(let reason) = wire {
            session?.link(self, failed: .protocolError(reason))
        } else if let failure = TLSFailure(error, role: role, refusal: refusal, handshakeOver: established) {
            session?.link(self, failed: .refused(failure.error, logLine: failure.logLine))
        } else {
            session?.link(self, failed: .failed(ErrorWords.of(error)))
        }
        close()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        if !decoding {
            // Also when nothing is buffered: an oversized frame may be cut short.
            if inbound == nil { inbound = ByteBuffer() }
            deliverFrames(atEnd: true)
        }
        inbound = nil
        if let socketDescriptor { busyPoll?.forget(socketDescriptor) }
        socketDescriptor = nil
        let session = self.session
        self.session = nil
        session?.linkClosed(self)
        context.fireChannelInactive()
    }

    // MARK: backpressure

    /// Whether frames and reads wait: the session is busy, or the peer does not read fast enough.
    private var heldBack: Bool {
        sessionBusy || !(context?.channel.isWritable ?? true)
    }

    public func read(context: ChannelHandlerContext) {
        if heldBack {
            readHeld = true
        } else {
            context.read()
        }
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { goOn() }
        context.fireChannelWritabilityChanged()
    }

    public func pauseReceiving(_ paused: Bool) {
        eventLoop.assertInEventLoop()
        sessionBusy = paused
        if !paused { goOn() }
    }

    /// The hold may be over: hand over what waits, then read again if asked to.
    private func goOn() {
        guard !heldBack else { return }
        if inbound != nil, !decoding {
            // Later on the loop: the session may be in the middle of what freed it.
            eventLoop.execute { [self] in
                if !decoding, !heldBack { deliverFrames(atEnd: false) }
                readIfHeld()
            }
        } else {
            readIfHeld()
        }
    }

    private func readIfHeld() {
        guard readHeld, !heldBack, let context else { return }
        readHeld = false
        context.read()
    }

    // MARK: sending

    public func write(limit: Int, _ encode: (inout ByteBuffer, _ limit: Int) throws(WireError) -> Void) -> WireError? {
        eventLoop.assertInEventLoop()
        guard let context else { return .unsendableFrame("not connected") }
        // Taken out while written to, so the buffer is never copied on write.
        var buffer = outbox ?? context.channel.allocator.buffer(capacity: 256)
        outbox = nil
        do throws(WireError) {
            try encode(&buffer, limit)
        } catch {
            outbox = buffer
            return error
        }
        outbox = buffer
        if buffer.readableBytes >= Self.flushThreshold {
            // A long batch: the peer starts on these while this end makes the rest.
            sendOutbox()
        } else if !flushScheduled {
            flushScheduled = true
            eventLoop.execute { [self] in
                flushScheduled = false
                sendOutbox()
            }
        }
        return nil
    }

    public func close() {
        eventLoop.assertInEventLoop()
        sendOutbox()
        context?.close(promise: nil)
    }

    private func sendOutbox() {
        guard let context, let buffer = outbox, buffer.readableBytes > 0 else { return }
        outbox = nil
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        trafficSeen()
    }

    /// Bytes went in or out: an answer, or the next request, is likely to follow soon.
    private func trafficSeen() {
        if let busyPoll, let socketDescriptor { busyPoll.activity(on: socketDescriptor) }
    }
}
